package templates

import (
	_ "embed"
	"fmt"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
)

// Defaults of Options.
const (
	DefaultMaxValueBytes = 16 << 10 // bytes kept of one inserted value
	DefaultInlineMax     = 100      // longest value inserted inline, quoted
)

// Options configure a Renderer. Zero fields take the defaults.
type Options struct {
	// MaxValueBytes caps each value inserted from steps or events; past
	// it, the head and the tail are kept around a
	// "[hookd: N bytes truncated]" marker. Default 16 KiB.
	MaxValueBytes int
	// InlineMax is the longest single-line string value inserted inline
	// as a quoted string (a trailing newline, as command output has, is
	// dropped); longer values, values with a line break, and objects and
	// lists go into fenced blocks. Default 100 bytes.
	InlineMax int
}

func (o *Options) setDefaults() {
	if o.MaxValueBytes <= 0 {
		o.MaxValueBytes = DefaultMaxValueBytes
	}
	if o.InlineMax <= 0 {
		o.InlineMax = DefaultInlineMax
	}
}

//go:embed preamble.md.tmpl
var preambleText string

var preamble = template.Must(template.New("preamble.md.tmpl").Option("missingkey=error").Parse(preambleText))

// preambleData is what the preamble template sees.
type preambleData struct {
	Hook        string
	Description string
	Trigger     string
	Now         string
	LastRun     string // "" when the hook never ran
	SinceLast   int64  // whole seconds from LastRun to Now, >= 0
	Workdir     string
}

// Renderer renders hook prompts: the preamble, then the hook's prompt with
// its placeholders expanded and the gathered values fenced as data. It
// implements engine.PromptRenderer and is safe for concurrent use.
type Renderer struct {
	opt Options
}

var _ engine.PromptRenderer = (*Renderer)(nil)

// New returns a Renderer with opt (zero fields take the defaults).
func New(opt Options) *Renderer {
	opt.setDefaults()
	return &Renderer{opt: opt}
}

// RenderPrompt renders h's prompt against scope. A placeholder that does
// not resolve is an error naming it.
func (r *Renderer) RenderPrompt(h *engine.Hook, scope *engine.Scope) (string, error) {
	phs, err := engine.ParsePlaceholders(h.Prompt)
	if err != nil {
		return "", fmt.Errorf("prompt: %w", err)
	}
	// Room for the preamble, the prompt and a few KiB of values; append
	// grows it for more.
	w := &writer{buf: make([]byte, 0, 2048+len(h.Prompt)+len(phs)*256)}
	if err := r.preamble(w, h, scope); err != nil {
		return "", err
	}
	last := 0
	for _, ph := range phs {
		w.text(h.Prompt[last:ph.Start])
		last = ph.End
		if ph.IsLiteral() {
			w.text(ph.Literal)
			continue
		}
		v, err := scope.Lookup(ph.Path)
		if err != nil {
			return "", err
		}
		if !isData(ph.Ref) {
			w.text(engine.Stringify(v))
			continue
		}
		r.value(w, ph.Ref, v)
	}
	w.text(h.Prompt[last:])
	return string(w.buf), nil
}

func (r *Renderer) preamble(w *writer, h *engine.Hook, scope *engine.Scope) error {
	d := preambleData{
		Hook:        h.Name,
		Description: strings.TrimSpace(h.Description),
		Trigger:     scope.Trigger,
		Now:         scope.Now.Format(time.RFC3339),
		Workdir:     h.Workdir,
	}
	if d.Trigger == "" {
		d.Trigger = "manual"
	}
	if !scope.LastRunTime.IsZero() {
		d.LastRun = scope.LastRunTime.Format(time.RFC3339)
		d.SinceLast = max(0, int64(scope.Now.Sub(scope.LastRunTime)/time.Second))
	}
	if err := preamble.Execute(w, d); err != nil {
		return fmt.Errorf("render preamble: %w", err)
	}
	return nil
}

// isData reports whether a placeholder path names gathered context (a
// step's result or the event payload) rather than one of hookd's own
// values (hook, run, trigger, now, last_run_time).
func isData(path string) bool {
	root, _, _ := strings.Cut(path, ".")
	return root == "event" || root == "steps" || strings.HasPrefix(root, "step_")
}

// value inserts one gathered value: numbers and booleans as they are,
// short single-line strings quoted, everything else in a fenced block.
func (r *Renderer) value(w *writer, path string, v any) {
	s, structured := "", false
	switch x := v.(type) {
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		// Nothing but digits, signs, dots and letters of true/false/e/NaN/Inf:
		// no room for text, so no fence.
		w.text(engine.Stringify(x))
		return
	case string:
		s = x
	case map[string]any, []any:
		s, structured = engine.Stringify(x), true
	default:
		s = engine.Stringify(x)
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s, cut := capValue(s, r.opt.MaxValueBytes)
	// A command's output ends with a newline: one at the end does not make
	// a value multi-line.
	if line := strings.TrimSuffix(s, "\n"); !structured && !cut && len(line) <= r.opt.InlineMax && !strings.ContainsAny(line, "\n\r") {
		w.inline(line)
		return
	}
	w.block(path, s)
}
