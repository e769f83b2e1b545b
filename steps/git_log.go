package steps

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
)

// DefaultMaxCommits is how many commits git_log lists when the step sets
// no max_count.
const DefaultMaxCommits = 50

// maxFilesPerCommit bounds the files git_log shows under one commit in its
// primary output; the files field lists them all up to max_files.
const maxFilesPerCommit = 50

func init() {
	engine.RegisterStep("git_log", engine.DeclaredKind{Build: newGitLog,
		Fields: []string{"log", "commits", "files", "count", "truncated", "since", "containment"}, Starts: engine.ProcessesFixed})
}

type gitLogConfig struct {
	Git      gitConfig `yaml:",inline"`
	Since    string    `yaml:"since"`
	MaxCount int       `yaml:"max_count"`
	Rev      string    `yaml:"rev"`
	Paths    []string  `yaml:"paths"`
}

// gitLogStep lists the commits made since the hook's last run (or since a
// given time), newest first, with the files each one touched.
type gitLogStep struct {
	def      *engine.StepDef
	repo     gitRepo
	since    string // may hold placeholders; "" means the last run's start
	maxCount int
	rev      string
	paths    []string
}

func newGitLog(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c gitLogConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	repo, err := newGitRepo(def, cfg, c.Git)
	if err != nil {
		return nil, err
	}
	s := &gitLogStep{def: def, repo: repo, since: c.Since, maxCount: c.MaxCount, rev: c.Rev}
	if _, err := engine.ParsePlaceholders(c.Since); err != nil {
		return nil, fieldErr(cfg, "since", "%v", err)
	}
	if c.Since != "" && !strings.Contains(c.Since, "{{") {
		if _, err := parseSince(c.Since, time.Now()); err != nil {
			return nil, fieldErr(cfg, "since", "%v", err)
		}
	}
	if c.MaxCount < 0 {
		return nil, fieldErr(cfg, "max_count", "must be > 0 (got %d)", c.MaxCount)
	}
	if s.maxCount == 0 {
		s.maxCount = DefaultMaxCommits
	}
	if s.rev == "" {
		s.rev = "HEAD"
	}
	if err := checkRevTemplate(cfg, "rev", s.rev); err != nil {
		return nil, err
	}
	for i, p := range c.Paths {
		field := fmt.Sprintf("paths[%d]", i)
		if err := checkPathTemplate(cfg, field, p, true); err != nil {
			return nil, err
		}
		if !strings.Contains(p, "{{") {
			if err := checkLocal(p); err != nil {
				return nil, fieldErr(cfg, field, "%v", err)
			}
		}
	}
	s.paths = c.Paths
	return s, nil
}

// parseSince reads a since value: a Go duration before now ("24h"), an
// RFC 3339 time, or a date ("2006-01-02", midnight UTC).
func parseSince(v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return time.Time{}, fmt.Errorf("duration %q must be > 0", v)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%q is not a duration (24h), an RFC 3339 time or a date (2006-01-02)", v)
}

// Templates returns the strings of the step that may hold placeholders.
func (s *gitLogStep) Templates() []string {
	return append(append(s.repo.templates(), s.since, s.rev), s.paths...)
}

// commitRecord is one commit as git_log reports it.
type commitRecord struct {
	hash, short, author, date, subject string
	files                              []string
	more                               int // files not kept in files
}

// newCommitRecord reads a commit's line of the log (its fields after the
// record separator).
func newCommitRecord(rest string) *commitRecord {
	f := strings.SplitN(rest, "\x1f", 5)
	for len(f) < 5 {
		f = append(f, "")
	}
	return &commitRecord{hash: f[0], short: f[1], author: f[2], date: f[3], subject: f[4]}
}

// line is the commit's line of the step's output.
func (c *commitRecord) line() string {
	return fmt.Sprintf("%s %s %s: %s\n", c.short, c.date, c.author, c.subject)
}

// liveLogLine is a line of the log as the step's output shows it, for
// its live output: a commit's line, a file indented under it; an empty
// line is dropped and hookd's notes are shown as they are.
func liveLogLine(line string) string {
	switch rest, ok := strings.CutPrefix(line, "\x1e"); {
	case ok:
		return newCommitRecord(rest).line()
	case line == "":
		return ""
	case strings.HasPrefix(line, "[hookd: "):
		return line + "\n"
	}
	return "    " + line + "\n"
}

// Run lists the commits. A repository without commits gives an empty
// log; a rev that is not a commit, a workspace that is not a repository
// and a timeout are errors.
func (s *gitLogStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{
		"log": "", "commits": []any{}, "files": []any{}, "since": "", "containment": "",
	})
	res.Count = new(0)
	scope := scopeOf(env)
	now := env.Now
	if now.IsZero() {
		now = time.Now()
	}
	var since time.Time
	if s.since != "" {
		v, err := engine.Expand(s.since, scope, nil)
		if err != nil {
			return fail(res, fmt.Errorf("since: %w", err))
		}
		if since, err = parseSince(v, now); err != nil {
			return fail(res, fmt.Errorf("since: %w", err))
		}
	} else {
		since = scope.LastRunTime
	}
	if !since.IsZero() {
		res.Fields["since"] = since.UTC().Format(time.RFC3339)
	}
	rev, err := revField("rev", s.rev, scope)
	if err != nil {
		return fail(res, err)
	}
	var paths []string
	for i, tmpl := range s.paths {
		p, err := engine.Expand(tmpl, scope, nil)
		if err != nil {
			return fail(res, fmt.Errorf("paths[%d]: %w", i, err))
		}
		if err := checkLocal(p); err != nil {
			return fail(res, fmt.Errorf("paths[%d]: %w", i, err))
		}
		paths = append(paths, p)
	}
	git, err := s.repo.open(ctx, env, res)
	if err != nil {
		return fail(res, err)
	}
	if _, ok, err := git.revParse(ctx, rev); err != nil {
		return fail(res, err)
	} else if !ok {
		if rev == "HEAD" {
			return done(res) // no commits yet
		}
		return fail(res, fmt.Errorf("rev: %q is not a commit in %s", rev, git.dir))
	}

	args := append([]string{"log", "--no-color", "--no-merges", "--name-only"}, gitDiffArgs...)
	args = append(args,
		"--format=%x1e%H%x1f%h%x1f%an%x1f%aI%x1f%s", fmt.Sprintf("--max-count=%d", s.maxCount))
	if !since.IsZero() {
		args = append(args, "--since="+since.UTC().Format(time.RFC3339))
	}
	args = append(append(args, rev, "--"), paths...)
	var (
		commits []*commitRecord
		files   = newFileList(s.repo.maxFiles)
	)
	if _, err := git.run(ctx, gitCmd{args: args, live: true, liveLines: liveLogLine, tee: func(line string) {
		if rest, ok := strings.CutPrefix(line, "\x1e"); ok {
			commits = append(commits, newCommitRecord(rest))
			return
		}
		if line == "" || len(commits) == 0 {
			return
		}
		c := commits[len(commits)-1]
		files.add(line)
		if len(c.files) < maxFilesPerCommit {
			c.files = append(c.files, line)
		} else {
			c.more++
		}
	}}); err != nil {
		return fail(res, err)
	}

	out := process.NewCapBuffer(s.repo.maxOutput)
	list := make([]any, 0, len(commits))
	for _, c := range commits {
		io.WriteString(out, c.line())
		cf := make([]any, len(c.files))
		for i, f := range c.files {
			fmt.Fprintf(out, "    %s\n", f)
			cf[i] = f
		}
		if c.more > 0 {
			fmt.Fprintf(out, "    ... and %d more files\n", c.more)
		}
		list = append(list, map[string]any{
			"hash": c.hash, "author": c.author, "date": c.date, "subject": c.subject, "files": cf,
		})
	}
	log, cut := out.String()
	res.Output = log
	res.Fields["log"] = log
	res.Fields["commits"] = list
	res.Fields["files"] = files.names
	res.Count, res.Truncated = new(len(commits)), cut || files.truncated()
	return done(res)
}
