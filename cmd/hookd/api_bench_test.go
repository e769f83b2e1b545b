package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
)

// BenchmarkPublishTCP measures POST /v1/events over loopback TCP from one
// client, each event accepted only once it is stored (and dispatched):
// the figure is events/s. "unmatched" publishes events no hook listens
// to; "matched" publishes events that trigger a hook (overlap skip, so
// most become skipped records: one more write per event).
//
//	go test -run '^$' -bench PublishTCP -benchtime 5000x ./cmd/hookd
func BenchmarkPublishTCP(b *testing.B) {
	for _, typ := range []string{"unmatched", "matched"} {
		b.Run(typ, func(b *testing.B) {
			addr, stop := benchDaemon(b)
			defer stop()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			evType := "bench.nobody"
			if typ == "matched" {
				evType = "bench.hooked"
			}
			b.ResetTimer()
			for i := range b.N {
				body, _ := json.Marshal(map[string]any{"type": evType, "id": fmt.Sprintf("b-%d", i), "data": map[string]any{"i": i}})
				req, _ := http.NewRequest("POST", "http://"+addr+"/v1/events", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var ans api.EmitAnswer
				err = json.NewDecoder(resp.Body).Decode(&ans)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 || ans.Seq == 0 {
					b.Fatalf("event %d: %d %+v %v", i, resp.StatusCode, ans, err)
				}
			}
			b.StopTimer()
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "events/s")
			b.Logf("POST /v1/events (%s): %d events accepted and stored in %s: %.0f events/s (target >= 2000/s)",
				typ, b.N, b.Elapsed().Round(time.Millisecond), rate)
		})
	}
}

// benchDaemon starts `hookd serve` with the TCP API on a free loopback
// port and returns its address. hooks are more hook files: name, body, ...
func benchDaemon(b *testing.B, hooks ...string) (string, func()) {
	b.Helper()
	addr, _, stop := benchDaemonDir(b, hooks...)
	return addr, stop
}

// benchDaemonDir is benchDaemon that also returns the project directory
// the daemon serves (where a command run finds it).
func benchDaemonDir(b *testing.B, hooks ...string) (addr, dir string, stop func()) {
	b.Helper()
	dir, err := os.MkdirTemp("", "hkb")
	if err != nil {
		b.Fatal(err)
	}
	write := func(rel, body string) {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "hooks.d"), 0o755); err != nil {
		b.Fatal(err)
	}
	write("hookd.yaml", "listen: 127.0.0.1:0\n")
	write("hooks.d/hooked.yaml", "trigger:\n  event: bench.hooked\nsteps:\n  - type: shell\n    command: \"true\"\nskip_llm: true\n")
	for i := 0; i+1 < len(hooks); i += 2 {
		write(filepath.Join("hooks.d", hooks[i]), hooks[i+1])
	}
	cmd := exec.Command(hookdBin, "serve")
	cmd.Dir = dir
	cmd.Env = append(childEnv(), "HOOKD_TOKEN="+testToken)
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		os.RemoveAll(dir)
	}
	re := regexp.MustCompile(`listen=(\S+)`)
	deadline := time.Now().Add(waitLong)
	for {
		if m := re.FindStringSubmatch(log.String()); m != nil && strings.Contains(log.String(), "hookd serving") {
			return m[1], dir, stop
		}
		if time.Now().After(deadline) {
			stop()
			b.Fatalf("hookd did not start:\n%s", log)
		}
		time.Sleep(pollStep)
	}
}
