package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// sqlRunSearchMark takes indexing out of the run's write: no trigger
// indexes a run as it finishes any more (nothing is added to that write),
// and the indexer (below) indexes finished runs in batches, in
// transactions of their own. runs_fts_mark holds the indexer's mark: every
// run up to that seq is indexed if it started and finished (or is gone);
// past it, the indexer looks for finished runs the index lacks. Retention
// still takes a run out of the index in the transaction that deletes it
// (runs_fts_forget). At the migration every finished run is indexed, so
// the mark is just below the first run still queued or running.
const sqlRunSearchMark = `
DROP TRIGGER runs_fts_index;
CREATE TABLE runs_fts_mark (
	id  INTEGER PRIMARY KEY CHECK (id = 1),
	seq INTEGER NOT NULL
);
INSERT INTO runs_fts_mark (id, seq) SELECT 1, coalesce(
	(SELECT min(seq) - 1 FROM runs WHERE status IN ('queued', 'running')),
	(SELECT max(seq) FROM runs),
	0);
`

// sqlUnindexed is true of a run (r) the index lacks and should hold: one
// that started and finished. runs_fts_docsize holds a row for each run
// the index holds (a query of runs_fts itself would read the view, which
// has every run).
const sqlUnindexed = `r.status NOT IN ('queued', 'running') AND r.started_at IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM runs_fts_docsize WHERE docid = r.seq)`

// Caps, in characters, on what of a run is indexed, so that a run with
// megabytes of output costs the index a bounded amount: words past a cap
// are not found.
const (
	indexEventCap  = 4096
	indexOutputCap = 65536 // of each step's output
	indexPromptCap = 8192
	indexAnswerCap = 65536
	indexErrorCap  = 4096 // of the run's error and of each step's
)

// sqlRunSearchText (migration 20) makes the index hold no copy of what it
// indexes: runs_fts becomes an external-content FTS4 table whose content
// is the view runs_fts_text, the indexed text computed from the run's row
// when FTS4 needs it (a snippet, a delete). Before, runs_fts_content held
// up to ~64 KB of each run a second time. What is indexed: the trigger,
// the event, each step's output and error, the prompt, the answer and the
// run's error, each capped (above). The view must give, when a run leaves
// the index, the text it gave when the run entered it, so:
//
//   - retention takes a run out of the index before it deletes it
//     (runs_fts_forget, BEFORE DELETE: FTS4 reads the words to remove from
//     the view);
//   - a change of an indexed run's text takes it out of the index first and
//     lowers the indexer's mark to it, so that the indexer indexes it again
//     (runs_fts_change; a run's record is final when indexed, so this only
//     guards);
//   - automerge keeps the segments few as runs are indexed, and Prune
//     optimizes the index after it deleted runs (optimizeIndex), which is
//     when FTS4 drops the deleted runs' entries and not before.
//
// Every finished run is indexed again here.
var sqlRunSearchText = fmt.Sprintf(`
DROP TRIGGER runs_fts_forget;
DROP TABLE runs_fts;
CREATE VIEW runs_fts_text (rowid, hook, body) AS SELECT seq, hook,
	"trigger" || char(10) ||
	substr(coalesce(event, ''), 1, %[1]d) || char(10) ||
	coalesce((SELECT group_concat(
		substr(coalesce(json_extract(j.value, '$.output'), ''), 1, %[2]d) || char(10) ||
		substr(coalesce(json_extract(j.value, '$.error'), ''), 1, %[5]d), char(10))
		FROM json_each(CASE WHEN json_valid(steps) THEN steps ELSE '[]' END) j), '') || char(10) ||
	substr(prompt, 1, %[3]d) || char(10) ||
	substr(response, 1, %[4]d) || char(10) ||
	substr(error, 1, %[5]d)
	FROM runs;
CREATE VIRTUAL TABLE runs_fts USING fts4(content="runs_fts_text", hook, body, tokenize=unicode61);
INSERT INTO runs_fts (runs_fts) VALUES ('automerge=8');
CREATE TRIGGER runs_fts_forget BEFORE DELETE ON runs
	WHEN EXISTS (SELECT 1 FROM runs_fts_docsize WHERE docid = old.seq)
BEGIN
	DELETE FROM runs_fts WHERE docid = old.seq;
END;
CREATE TRIGGER runs_fts_change BEFORE UPDATE OF hook, "trigger", event, steps, prompt, response, error ON runs
	WHEN EXISTS (SELECT 1 FROM runs_fts_docsize WHERE docid = old.seq)
BEGIN
	DELETE FROM runs_fts WHERE docid = old.seq;
	UPDATE runs_fts_mark SET seq = min(seq, old.seq - 1);
END;
INSERT INTO runs_fts (docid, hook, body) SELECT t.rowid, t.hook, t.body FROM runs_fts_text t
	WHERE t.rowid IN (SELECT seq FROM runs WHERE status NOT IN ('queued', 'running') AND started_at IS NOT NULL);
INSERT INTO runs_fts (runs_fts) VALUES ('optimize');
`, indexEventCap, indexOutputCap, indexPromptCap, indexAnswerCap, indexErrorCap)

// optimizeIndex merges the search index into one segment, which drops
// the entries of the runs deleted from it (FTS4 keeps them, and a record
// of their deletion, until a merge into its oldest segment). Prune calls
// it after it deleted runs; it holds the writer for as long as it reads
// and writes the index once.
func (d *DB) optimizeIndex(ctx context.Context) error {
	_, err := d.w.ExecContext(ctx, `INSERT INTO runs_fts (runs_fts) VALUES ('optimize')`)
	return err
}

// Indexer settings: runs finishing within indexGather of each other share
// a batch; a batch holds at most indexBatch runs, so it holds the writer
// for a few milliseconds.
const (
	indexGather = 200 * time.Millisecond
	indexBatch  = 64
)

// indexer is the background goroutine of a DB that indexes finished runs.
// It starts with the first run this DB finishes (a CLI process that only
// reads never starts one) and stops with Close.
type indexer struct {
	mu      sync.Mutex
	started bool
	closed  bool
	wake    chan struct{} // buffered: a poke never waits
	stop    chan struct{}
	done    chan struct{}
}

// pokeIndexer tells the indexer that runs finished, starting it if need
// be.
func (d *DB) pokeIndexer() {
	ix := &d.ix
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return
	}
	if !ix.started {
		ix.started = true
		ix.wake = make(chan struct{}, 1)
		ix.stop = make(chan struct{})
		ix.done = make(chan struct{})
		go d.indexLoop(ix.wake, ix.stop, ix.done)
	}
	ix.mu.Unlock()
	select {
	case ix.wake <- struct{}{}:
	default:
	}
}

func (d *DB) indexLoop(wake, stop, done chan struct{}) {
	defer close(done)
	for {
		select {
		case <-stop:
			return
		case <-wake:
		}
		t := d.clock.NewTimer(indexGather)
		select {
		case <-stop:
			t.Stop()
			return
		case <-t.C():
		}
		// An error leaves the runs queued: the next poke, a search or
		// Close indexes them.
		for {
			more, err := d.indexBatch(context.Background(), indexBatch)
			if err != nil || !more {
				break
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}
}

// stopIndexer stops the indexer and, when this DB started one, indexes
// what is still queued, so that a process that finished runs leaves them
// searchable. It is safe twice.
func (d *DB) stopIndexer() error {
	ix := &d.ix
	ix.mu.Lock()
	started := ix.started && !ix.closed
	ix.closed = true
	ix.mu.Unlock()
	if !started {
		return nil
	}
	close(ix.stop)
	<-ix.done
	return d.indexQueued(context.Background())
}

// IndexQueued indexes every finished run the search index lacks, in
// batches, and returns when none is left. SearchRuns calls it first, so a
// search sees every finished run.
func (d *DB) IndexQueued(ctx context.Context) error {
	if err := d.indexQueued(ctx); err != nil {
		return fmt.Errorf("index runs: %w", err)
	}
	return nil
}

func (d *DB) indexQueued(ctx context.Context) error {
	if queued, err := d.queued(ctx); err != nil || !queued {
		return err
	}
	for {
		more, err := d.indexBatch(ctx, indexBatch)
		if err != nil || !more {
			return err
		}
	}
}

// queued reports whether finished runs wait for the index (a read, no
// lock): it looks at the runs past the mark only, which the indexer keeps
// few.
func (d *DB) queued(ctx context.Context) (bool, error) {
	var n int
	err := d.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs r
		WHERE r.seq > (SELECT seq FROM runs_fts_mark) AND `+sqlUnindexed+`)`).Scan(&n)
	return n == 1, err
}

// indexBatch indexes up to max finished runs past the mark in one
// transaction (FTS4 writes one segment for the batch) and moves the mark
// past every run that is done (indexed, or never to be: a gate's record),
// up to the first one still queued or running. It reports whether more
// runs wait.
func (d *DB) indexBatch(ctx context.Context, max int) (more bool, err error) {
	err = d.tx(ctx, func(tx *sql.Tx) error {
		var mark int64
		if err := tx.QueryRowContext(ctx, `SELECT seq FROM runs_fts_mark`).Scan(&mark); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT r.seq, r.status IN ('queued', 'running'),
			CASE WHEN `+sqlUnindexed+` THEN 1 ELSE 0 END
			FROM runs r WHERE r.seq > ? ORDER BY r.seq`, mark)
		if err != nil {
			return err
		}
		var (
			todo    []int64
			newMark = mark
			blocked bool // a run still queued or running was passed
		)
		for rows.Next() {
			var (
				seq           int64
				pending, need bool
			)
			if err := rows.Scan(&seq, &pending, &need); err != nil {
				rows.Close()
				return err
			}
			if need {
				if len(todo) == max {
					more = true
					break
				}
				todo = append(todo, seq)
			}
			blocked = blocked || pending
			if !blocked {
				newMark = seq
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(todo) > 0 {
			q, args := inList(`INSERT INTO runs_fts (docid, hook, body) SELECT rowid, hook, body FROM runs_fts_text WHERE rowid IN `, todo)
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		if newMark != mark {
			_, err = tx.ExecContext(ctx, `UPDATE runs_fts_mark SET seq = ?`, newMark)
		}
		return err
	})
	return more, err
}
