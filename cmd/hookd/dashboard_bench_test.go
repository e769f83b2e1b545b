package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/store"
)

// BenchmarkDashboard measures the server time of the dashboard's pages
// (their Server-Timing header: from the request's arrival to the page
// rendered, queries included) with 100 hooks and 100,000 stored runs,
// against a real `hookd serve`. The target is <= 50 ms a page.
//
//	go test -run '^$' -bench Dashboard -benchtime 50x ./cmd/hookd
func BenchmarkDashboard(b *testing.B) {
	const hooks, runs = 100, 100_000
	dir, err := os.MkdirTemp("", "hkd")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "hooks.d"), 0o755); err != nil {
		b.Fatal(err)
	}
	write := func(rel, body string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("hookd.yaml", "listen: 127.0.0.1:0\n")
	for i := range hooks {
		trigger := fmt.Sprintf("trigger:\n  event: bench.h%03d\n", i)
		if i%2 == 0 {
			trigger = fmt.Sprintf("trigger:\n  cron: \"%d 3 * * *\"\n", i%60)
		}
		write(fmt.Sprintf("hooks.d/hook%03d.yaml", i), trigger+"steps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n")
	}
	start := time.Now()
	seedRuns(b, filepath.Join(dir, ".hookd", "hookd.db"), hooks, runs, time.Now())
	b.Logf("recorded %d runs of %d hooks in %s", runs, hooks, time.Since(start).Round(time.Millisecond))

	cmd := exec.Command(hookdBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(childEnv(), "HOOKD_TOKEN="+testToken)
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	re := regexp.MustCompile(`listen=(\S+)`)
	var addr string
	for deadline := time.Now().Add(waitLong); addr == ""; {
		if m := re.FindStringSubmatch(log.String()); m != nil && strings.Contains(log.String(), "hookd serving") {
			addr = m[1]
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("hookd did not start:\n%s", log)
		}
		time.Sleep(pollStep)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + addr
	req, _ := http.NewRequest("POST", base+"/login", strings.NewReader(url.Values{"token": {testToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, "hookd_session_") {
			cookie = c
		}
	}
	if cookie == nil {
		b.Fatalf("login: %s", resp.Status)
	}
	pages := []struct{ name, path string }{
		{"overview", "/"},
		{"hooks", "/hooks"},
		{"runs", "/runs"},
		{"runs-page-100", fmt.Sprintf("/runs?before=bench%07d", runs-50*100)},
		{"runs-filtered", "/runs?hook=hook042&status=failed&since=7d"},
		{"run", fmt.Sprintf("/runs/bench%07d", runs/2)},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			var server []time.Duration
			for range b.N {
				req, _ := http.NewRequest("GET", base+p.path, nil)
				req.AddCookie(cookie)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := resp.Body.Read(make([]byte, 1))
				resp.Body.Close()
				if resp.StatusCode != 200 || n == 0 {
					b.Fatalf("GET %s: %s", p.path, resp.Status)
				}
				ms, err := strconv.ParseFloat(strings.TrimPrefix(resp.Header.Get("Server-Timing"), "render;dur="), 64)
				if err != nil {
					b.Fatalf("GET %s: Server-Timing %q", p.path, resp.Header.Get("Server-Timing"))
				}
				server = append(server, time.Duration(ms*float64(time.Millisecond)))
			}
			sort.Slice(server, func(i, j int) bool { return server[i] < server[j] })
			var sum time.Duration
			for _, d := range server {
				sum += d
			}
			mean := sum / time.Duration(len(server))
			p95 := server[(len(server)*95)/100-min(1, len(server)*95/100)]
			b.ReportMetric(float64(mean)/float64(time.Millisecond), "server-ms/page")
			b.Logf("GET %s with %d hooks and %d runs: server time mean %.1f ms, p95 %.1f ms, max %.1f ms over %d requests (target <= 50 ms)",
				p.path, hooks, runs, ms(mean), ms(p95), ms(server[len(server)-1]), len(server))
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seedRuns records n runs of hooks hook000... in a new database at path,
// one every 30 seconds up to now, in one statement: mostly completed, some
// failed and skipped, each with two steps' output, a prompt and an answer.
func seedRuns(b *testing.B, path string, hooks, n int, now time.Time) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		b.Fatal(err)
	}
	db, err := store.Open(path) // the schema
	if err != nil {
		b.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	step := `{"index":%d,"name":"s%d","type":"shell","output":"` + strings.Repeat("output line of the step\\n", 20) +
		`","fields":{"exit_code":0},"started":"2026-01-01T00:00:00Z","duration_ns":1500000000}`
	steps := "[" + fmt.Sprintf(step, 0, 0) + "," + fmt.Sprintf(step, 1, 1) + "]"
	const gap = int64(30 * time.Second)
	end := now.UnixNano()
	_, err = raw.Exec(`WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < ?)
		INSERT INTO runs (id, hook, "trigger", status, reason, steps, prompt, response, queued_at, started_at, finished_at)
		SELECT printf('bench%07d', n), printf('hook%03d', n % ?), 'schedule',
			CASE WHEN n % 17 = 0 THEN 'failed' WHEN n % 11 = 0 THEN 'skipped' ELSE 'completed' END,
			CASE WHEN n % 11 = 0 AND n % 17 <> 0 THEN 'in_flight: the previous run is still running' ELSE '' END,
			CASE WHEN n % 11 = 0 AND n % 17 <> 0 THEN NULL ELSE ? END,
			CASE WHEN n % 11 = 0 AND n % 17 <> 0 THEN '' ELSE ? END,
			CASE WHEN n % 11 = 0 AND n % 17 <> 0 THEN '' ELSE 'All is well.' END,
			? - (? - n) * ?,
			CASE WHEN n % 11 = 0 AND n % 17 <> 0 THEN NULL ELSE ? - (? - n) * ? END,
			? - (? - n) * ? + (n % 40) * 1000000000
		FROM c`, n, hooks, steps, strings.Repeat("The prompt. ", 40),
		end, n, gap, end, n, gap, end, n, gap)
	if err != nil {
		b.Fatalf("record runs: %v", err)
	}
}
