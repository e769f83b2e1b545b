package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hookd/hookd/budget"
	"github.com/hookd/hookd/engine"
)

// hooksJSONCases are hook states with every field set and unset, and
// strings encoding/json escapes.
func hooksJSONCases() []engine.HookStatus {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		berlin = time.FixedZone("CET", 3600)
	}
	at := time.Date(2026, 11, 26, 1, 2, 3, 456789000, berlin)
	return []engine.HookStatus{
		{},
		{Name: "backup", Trigger: "every 1h0m0s", Enabled: true, NextDue: at, Queued: 2, LastRunID: "01JN0000",
			LastStatus: engine.StatusRunning, LastStart: at.Add(-time.Hour).UTC(), InFlight: "01JN0000",
			File: "hooks.d/backup.yaml", Version: "3f9a2c1b0d4e", Project: "proj-1"},
		{Name: "paused", Trigger: "0 3 * * * (Europe/Berlin)", Paused: true, File: "/abs/hooks.d/paused.yaml", Version: "x",
			LastStatus: engine.Status("a status from a newer daemon")},
		{Name: "nightly", Trigger: "0 3 * * *", Enabled: true, LastRunID: "01JN0001", LastStatus: engine.StatusCompleted,
			LastCheckFailed: "tests", File: "hooks.d/nightly.yaml", Version: "y"},
		{Name: `quote" back\slash <html> & ünïcödé ☃`, Trigger: "event deploy.*\twhere\n", File: "a\x00b\x1fc\u2028d",
			Version: "\xff\xfeinvalid", Project: "é"},
		{Name: "budget", Trigger: "manual", Enabled: true, Queued: -3, Budget: &budget.SpendWindows{
			Hour: budget.SpendWindow{Tokens: 800, Prompt: 600, Completion: 200, Limit: 800, Runs: 2, Cost: 0.0035},
			Day:  budget.SpendWindow{Tokens: 1 << 40, Unpriced: 7, Unreported: 1}, MaxTokensPerRun: 500}},
		{Name: "nanos", NextDue: time.Date(2026, 1, 2, 3, 4, 5, 1, time.FixedZone("", -(9*3600+30*60))),
			LastStart: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
	}
}

// TestHooksJSONMatchesEncodingJSON: the answer of GET /v1/hooks is the
// bytes encoding/json writes for the same hooks, and list reads back
// what encoding/json reads, on the fast path for everything this daemon
// writes that has no escapes.
func TestHooksJSONMatchesEncodingJSON(t *testing.T) {
	cases := hooksJSONCases()
	for i := range cases {
		for _, hs := range [][]engine.HookStatus{cases[i : i+1], cases, {}} {
			want, err := json.Marshal(hs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendHooks(nil, hs)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("appendHooksJSON:\n got %s\nwant %s", got, want)
			}
			var std []engine.HookStatus
			if err := json.Unmarshal(want, &std); err != nil {
				t.Fatal(err)
			}
			dec, err := DecodeHooks(want)
			if err != nil {
				t.Fatalf("decodeHooksJSON(%s): %v", want, err)
			}
			if !reflect.DeepEqual(dec, std) {
				t.Errorf("decodeHooksJSON(%s):\n got %+v\nwant %+v", want, dec, std)
			}
			if _, fast := parseHooksJSON(want); fast != !bytes.Contains(want, []byte(`\`)) {
				t.Errorf("parseHooksJSON(%s): fast path %v", want, fast)
			}
		}
	}
	if got, _ := AppendHooks(nil, nil); string(got) != "null" {
		t.Errorf("nil hooks: %s", got)
	}
	// A time encoding/json refuses is refused.
	if _, err := AppendHooks(nil, []engine.HookStatus{{NextDue: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}); err == nil {
		t.Error("year 10000 encoded")
	}
}

// TestDecodeHooksJSONOtherShapes: an older daemon's indented answer, a
// newer daemon's unknown field, keys in another case, nulls and errors
// decode as encoding/json decodes them.
func TestDecodeHooksJSONOtherShapes(t *testing.T) {
	indented, err := json.MarshalIndent(hooksJSONCases()[1:3], "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		string(indented),
		" [ ] \n",
		`[{"name":"a","new_field":{"x":[1,2]},"queued":1}]`,
		`[{"NAME":"a","Queued":1}]`,
		`[{"name":null,"next_due":null,"budget":null}]`,
		`[{"name":"a","name":"b","queued":1,"queued":2}]`,
		`[{"budget":{"hour":{"tokens":1}},"budget":{"day":{"tokens":2}}}]`,
		`[{"queued":1.5}]`, `[{"queued":1e3}]`, `[{"queued":01}]`, `[{"queued":-}]`,
		`[{"queued":99999999999999999999}]`, `[{"enabled":truex}]`, `[{"enabled":"true"}]`,
		`[{"next_due":"yesterday"}]`, `[{"name":"a"}] x`, `[{"name":"a"},]`, `[{"name":"a"}`, `null`, `{}`, ``,
		"[{\"name\":\"a\x01\"}]", `[{"name":"\u00e9"}]`, "[{\"name\":\"\xff\"}]",
		`[{"budget":{"hour":{"tokens":"x"}}}]`, `[{"budget":{]}]`, `[{"budget":[]}]`,
	} {
		var want []engine.HookStatus
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := DecodeHooks([]byte(in))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("decodeHooksJSON(%q): error %v, encoding/json: %v", in, err, wantErr)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("decodeHooksJSON(%q):\n got %+v\nwant %+v", in, got, want)
		}
	}
	// The indented answer of an older daemon takes the fast path too.
	if _, fast := parseHooksJSON(indented); !fast {
		t.Errorf("indented answer not parsed directly:\n%s", indented)
	}
}

// FuzzDecodeHooksJSON: whatever parseHooksJSON accepts, encoding/json
// decodes without error to the same hooks.
func FuzzDecodeHooksJSON(f *testing.F) {
	for _, hs := range [][]engine.HookStatus{hooksJSONCases(), hooksJSONCases()[1:2]} {
		b, _ := json.Marshal(hs)
		f.Add(b)
		b, _ = json.MarshalIndent(hs, "", "\t")
		f.Add(b)
	}
	f.Add([]byte(`[{"name":"a","queued":-0,"enabled":false}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := parseHooksJSON(data)
		if !ok {
			return
		}
		var want []engine.HookStatus
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("parseHooksJSON accepted %q, encoding/json: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("parseHooksJSON(%q):\n got %+v\nwant %+v", data, got, want)
		}
	})
}

// TestHooksJSONEveryField: a hook with every field of HookStatus set is
// written as encoding/json writes it, each of its json keys present, and
// read back whole — so a field added to HookStatus and not to the codec
// fails here (the sandbox field was missing from /v1/hooks that way).
func TestHooksJSONEveryField(t *testing.T) {
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	h := engine.HookStatus{Name: "n", Project: "p", Trigger: "every 1m", Enabled: true, Paused: true, NextDue: at,
		InFlight: "r1", Queued: 2, LastRunID: "r0", LastStatus: engine.StatusCompleted, LastCheckFailed: "step_0",
		LastStart: at, File: "hooks.d/n.yaml", Version: "v1", Budget: &budget.SpendWindows{}, Sandbox: "landlock",
		Broken: &engine.BrokenFile{File: "hooks.d/n.yaml", Hook: "n", Errors: []string{"hooks.d/n.yaml:2: x: bad"}, Previous: "v0"}}
	typ := reflect.TypeOf(h)
	v := reflect.ValueOf(h)
	for i := range typ.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test leaves HookStatus.%s unset: set it", typ.Field(i).Name)
		}
	}
	want, err := json.Marshal([]engine.HookStatus{h})
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendHooks(nil, []engine.HookStatus{h})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("AppendHooks:\n got %s\nwant %s", got, want)
	}
	dec, ok := parseHooksJSON(want)
	if !ok || len(dec) != 1 || !reflect.DeepEqual(dec[0], h) {
		t.Errorf("parseHooksJSON (fast path %v):\n got %+v\nwant %+v", ok, dec, h)
	}
}
