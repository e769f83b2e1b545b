package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hookd/hookd/engine"
)

func TestDaemonNotifyAndAPI(t *testing.T) {
	t.Parallel()
	src := `listen: 127.0.0.1:8787
token_file: secrets/token
overdue_grace: 5m
notify:
  - name: ops
    format: slack
    url_env: SLACK_URL
    on: [failed, skipped]
  - url: https://example.com/hook
`
	d, err := LoadDaemon(strings.NewReader(src), "/srv/hookd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.NotifyTarget{
		{Name: "ops", Format: "slack", URLEnv: "SLACK_URL", On: []string{"failed", "skipped"}},
		{Format: "generic", URL: "https://example.com/hook", On: []string{"failed"}},
	}
	if !reflect.DeepEqual(d.Notify, want) {
		t.Errorf("notify:\n got %+v\nwant %+v", d.Notify, want)
	}
	if d.TokenFile != "/srv/secrets/token" || d.TokenEnv != "HOOKD_TOKEN" || d.OverdueGrace != 5*time.Minute {
		t.Errorf("api settings: %+v", d)
	}
}

func TestDaemonNotifyErrors(t *testing.T) {
	t.Parallel()
	src := `token_env: 1X
token_file: t
overdue_grace: -1s
notify:
  - format: teams
    url: ftp://x/secret-path
    on: [failed, exploded]
  - url: https://a/b
    url_env: B
  - name: nothing
  - url_env: "bad name"
    on: []
  - ~
  - {fromat: slack, url_env: X}
`
	_, err := LoadDaemon(strings.NewReader(src), "hookd.yaml")
	want := `hookd.yaml:1: token_env: "1X" is not an environment variable name
hookd.yaml:2: token_file: give token_env or token_file, not both
hookd.yaml:3: overdue_grace: must be >= 0 (got -1s)
hookd.yaml:5: notify[0].format: must be generic, slack or discord (got "teams")
hookd.yaml:6: notify[0].url: not an http(s) URL
hookd.yaml:7: notify[0].on[1]: must be started, completed, failed, skipped, cancelled, check_failed or invalid_file (got "exploded")
hookd.yaml:9: notify[1].url_env: give url or url_env, not both
hookd.yaml:10: notify[2]: needs url or url_env (the environment variable that holds the webhook URL)
hookd.yaml:11: notify[3].url_env: "bad name" is not an environment variable name
hookd.yaml:12: notify[3].on: must name at least one outcome (leave it out for [failed])
hookd.yaml:13: notify[4]: expected a webhook target, got null
hookd.yaml:14: notify[5].fromat: unknown field; did you mean format?`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
	if strings.Contains(err.Error(), "secret-path") {
		t.Error("an error repeats the URL")
	}
	if _, err := LoadDaemon(strings.NewReader("notify: {url: https://x}\n"), "hookd.yaml"); err == nil ||
		!strings.Contains(err.Error(), "notify: expected a list of webhook targets") {
		t.Errorf("notify as a mapping: %v", err)
	}
}

func TestHookNotify(t *testing.T) {
	t.Parallel()
	h, err := ParseHook(strings.NewReader("notify:\n  - {format: discord, url_env: D, on: [completed]}\n"), "x.yaml", Options{DefaultName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if !h.NotifySet || !reflect.DeepEqual(h.Notify, []engine.NotifyTarget{{Format: "discord", URLEnv: "D", On: []string{"completed"}}}) {
		t.Errorf("notify: %v %+v", h.NotifySet, h.Notify)
	}
	h, err = ParseHook(strings.NewReader("notify: []\n"), "x.yaml", Options{DefaultName: "x"})
	if err != nil || !h.NotifySet || h.Notify == nil || len(h.Notify) != 0 {
		t.Errorf("notify: []: %v %v %+v", err, h.NotifySet, h.Notify)
	}
	h, err = ParseHook(strings.NewReader("description: d\n"), "x.yaml", Options{DefaultName: "x"})
	if err != nil || h.NotifySet || h.Notify != nil {
		t.Errorf("no notify: %v %v %+v", err, h.NotifySet, h.Notify)
	}
	_, err = ParseHook(strings.NewReader("notify:\n  - {url: https://x, on: [nope]}\n"), "x.yaml", Options{DefaultName: "x"})
	if err == nil || !strings.Contains(err.Error(), "x.yaml:2: notify[0].on[0]: must be started") {
		t.Errorf("bad outcome: %v", err)
	}
}
