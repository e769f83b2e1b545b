package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/internal/suggest"
	"gopkg.in/yaml.v3"
)

// stepKeys are the keys every step has; the others belong to its kind.
var stepKeys = []string{"name", "type", "timeout", "required", "allow_failure", "skip_llm_if_exit_zero",
	"skip_llm_if_status_ok", "skip_llm_if_empty", "skip_llm_if_unchanged", "skip_llm_if", "if", "secrets", "writes", "network"}

// steps decodes a hook's steps. The common keys fill the StepDef; the
// rest go to the step kind through a Decoder. Placeholders in a step may
// only name earlier steps.
func (s *state) steps(n *yaml.Node, path string, h *engine.Hook, opts Options) {
	if n.Kind != yaml.SequenceNode {
		s.errorf(n, path, "expected a list of steps, got %s", describe(n))
		return
	}
	type pending struct {
		def     *engine.StepDef
		path    string
		kind    engine.StepKind
		rest    *yaml.Node // mapping of the kind-specific keys
		ifNode  *yaml.Node
		ifValue string
		// if: the condition under which the step runs
		runIfNode *yaml.Node
		runIf     string
		// secrets: the hook's secrets the step's processes get
		secretsNode *yaml.Node
		// writes: and network: (sandbox.go)
		writes, network *yaml.Node
	}
	s.cmds = nil
	var todoBuf [4]pending // most hooks have a few steps
	todo := todoBuf[:0]
	names := map[string]int{} // step name -> line
	for i, item := range n.Content {
		item = resolve(item)
		p := index(path, i)
		def := &engine.StepDef{Index: i, Line: item.Line}
		h.Steps = append(h.Steps, def)
		if item.Kind != yaml.MappingNode {
			s.errorf(item, p, "expected a mapping with a type, got %s", describe(item))
			continue
		}
		if !s.enter(item, p) {
			return
		}
		rest := s.sc.mapping(item) // the kind's keys, taken from item
		var typeNode, ifNode, allowNode, runIfNode, secretsNode, writesNode, networkNode *yaml.Node
		var runIf string
		for _, kv := range s.pairs(item, p) {
			fp := join(p, kv.key)
			v := resolve(kv.v)
			if isNull(v) && kv.key != "type" && slices.Contains(stepKeys, kv.key) {
				continue
			}
			switch kv.key {
			case "name":
				if !s.decodeAt(v, fp, &def.Name) {
					break
				}
				if !stepName.MatchString(def.Name) {
					s.errorf(v, fp, "%q is not a valid step name (use letters, digits, '_', '-')", def.Name)
				} else if first, dup := names[def.Name]; dup {
					s.errorf(v, fp, "duplicate step name %q (first at line %d)", def.Name, first)
				} else {
					names[def.Name] = v.Line
				}
			case "type":
				typeNode = v
			case "timeout":
				if s.decodeAt(v, fp, &def.Timeout) {
					positive(s, v, fp, def.Timeout)
				}
			case "required":
				s.decodeAt(v, fp, &def.Required)
			case "allow_failure":
				if s.decodeAt(v, fp, &def.AllowFailure) && def.AllowFailure {
					allowNode = v
				}
			case "skip_llm_if_exit_zero":
				s.decodeAt(v, fp, &def.Skip.IfExitZero)
			case "skip_llm_if_status_ok":
				s.decodeAt(v, fp, &def.Skip.IfStatusOK)
			case "skip_llm_if_empty":
				s.decodeAt(v, fp, &def.Skip.IfEmpty)
			case "skip_llm_if_unchanged":
				s.decodeAt(v, fp, &def.Skip.IfUnchanged)
			case "if":
				if s.decodeAt(v, fp, &runIf) {
					runIfNode = v
				}
			case "secrets":
				s.secretNames(v, fp, h.Secrets, &def.Secrets)
				secretsNode = v
			case "writes":
				writesNode = v
			case "network":
				networkNode = v
			case "skip_llm_if":
				if s.decodeAt(v, fp, &def.Skip.If) {
					if strings.TrimSpace(def.Skip.If) == "" {
						s.errorf(v, fp, "must not be empty")
					} else {
						ifNode = v
					}
				}
			default:
				rest.Content = append(rest.Content, kv.k, kv.v)
			}
		}
		s.leave(item)
		if allowNode != nil && def.Required {
			s.errorf(allowNode, join(p, "allow_failure"), "contradicts required: true (a required step always fails the run when it fails)")
		}
		kind := s.stepKind(typeNode, item, p, def)
		todo = append(todo, pending{def: def, path: p, kind: kind, rest: rest, ifNode: ifNode, ifValue: def.Skip.If,
			runIfNode: runIfNode, runIf: runIf, secretsNode: secretsNode, writes: writesNode, network: networkNode})
	}

	for _, t := range todo {
		s.placeholdersIn(t.rest, t.path, h.Steps, t.def.Index)
		if t.ifNode != nil {
			// The condition is tested after its own step ran.
			if lonePlaceholder(t.ifValue) {
				s.placeholders(t.ifNode, join(t.path, "skip_llm_if"), t.ifValue, h.Steps, t.def.Index+1)
			} else {
				t.def.Skip.If = ""
				c, err := engine.CompileCondition(t.ifValue, h.Steps, t.def.Index+1)
				if err != nil {
					s.errorf(t.ifNode, join(t.path, "skip_llm_if"), "%s", err)
				}
				t.def.Skip.Cond = c
			}
		}
		if t.runIfNode != nil {
			// Tested before the step runs: earlier steps only.
			c, err := engine.CompileCondition(t.runIf, h.Steps, t.def.Index)
			if err != nil {
				s.errorf(t.runIfNode, join(t.path, "if"), "%s", err)
			}
			t.def.If = c
		}
		if t.kind == nil {
			continue
		}
		if t.secretsNode != nil {
			s.stepSecretsAllowed(t.secretsNode, join(t.path, "secrets"), t.def, t.kind)
		}
		s.stepSandbox(t.def, t.path, t.writes, t.network, h, opts)
		if opts.Warn != nil && engine.KindProcesses(t.def.Type) != engine.ProcessesNone {
			for i := 0; i+1 < len(t.rest.Content); i += 2 {
				if resolve(t.rest.Content[i]).Value == "command" {
					s.cmds = append(s.cmds, stepCommand{def: t.def, path: t.path, node: t.rest.Content[i+1]})
				}
			}
		}
		dec := s.sc.newDecoder()
		*dec = Decoder{file: s.file, path: t.path, node: t.rest, line: t.def.Line, known: stepKeys, budget: s.budget, sc: s.sc}
		step, err := t.kind.New(t.def, dec)
		switch {
		case err != nil:
			if l, ok := asErrors(err); ok {
				for _, e := range l {
					s.addError(e)
				}
			} else {
				s.addError(&Error{File: s.file, Line: t.def.Line, Field: t.path, Msg: err.Error(), Err: err})
			}
		case !dec.used && len(t.rest.Content) > 0:
			dec.unused(s)
		case step == nil:
			s.add(t.def.Line, t.path, fmt.Sprintf("step kind %q built no step", t.def.Type))
		default:
			t.def.Step = step
		}
	}
}

// stepKind decodes a step's type and looks its kind up.
func (s *state) stepKind(n, item *yaml.Node, path string, def *engine.StepDef) engine.StepKind {
	fp := join(path, "type")
	if isNull(n) {
		s.add(item.Line, fp, "required (known: "+knownKinds()+")")
		return nil
	}
	if !s.decodeAt(n, fp, &def.Type) {
		return nil
	}
	kind, ok := engine.LookupStep(def.Type)
	if !ok {
		msg := fmt.Sprintf("unknown step type %q", def.Type)
		if sug := suggest.Closest(def.Type, engine.StepKinds()); sug != "" {
			msg += fmt.Sprintf("; did you mean %s?", sug)
		}
		s.errorf(n, fp, "%s (known: %s)", msg, knownKinds())
		return nil
	}
	return kind
}

func knownKinds() string {
	k := engine.StepKinds()
	if len(k) == 0 {
		return "none registered"
	}
	return strings.Join(k, ", ")
}

// placeholdersIn checks every string inside n, the kind-specific fields
// of step before, against the hook's steps.
func (s *state) placeholdersIn(n *yaml.Node, path string, steps []*engine.StepDef, before int) {
	s.placeholdersBelow(n, lazyPath{root: path, segs: s.sc.pathSegs(8)}, steps, before)
}

// placeholdersBelow is placeholdersIn with the path of n built only when
// an error names it: most values hold no placeholder and no error.
func (s *state) placeholdersBelow(n *yaml.Node, p lazyPath, steps []*engine.StepDef, before int) {
	n = resolve(n)
	if n == nil {
		return
	}
	if r := s.tryEnter(n); r != entered {
		s.refuse(n, p.String(), r)
		return
	}
	defer s.leave(n)
	switch n.Kind {
	case yaml.ScalarNode:
		// Text without "{{" holds no placeholder and no error.
		if strings.Contains(n.Value, "{{") && n.ShortTag() == "!!str" {
			s.placeholders(n, p.String(), n.Value, steps, before)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			s.placeholdersBelow(c, p.with(pathSeg{index: i}), steps, before)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			s.placeholdersBelow(n.Content[i+1], p.with(pathSeg{key: n.Content[i], index: -1}), steps, before)
		}
	}
}

// A lazyPath is the field path of a node met by placeholdersBelow: root
// followed by segs, as join and index would build it.
type lazyPath struct {
	root string
	segs []pathSeg
}

// A pathSeg is a step of a lazyPath: the value of key (nothing for a
// merge key "<<") or, when index is not negative, an index.
type pathSeg struct {
	key   *yaml.Node
	index int
}

// with returns p followed by seg. Siblings share segs' array: each
// overwrites the slot of the one before, which is done with it.
func (p lazyPath) with(seg pathSeg) lazyPath {
	p.segs = append(p.segs, seg)
	return p
}

// String builds the path as join and index do.
func (p lazyPath) String() string {
	path := p.root
	for _, seg := range p.segs {
		if seg.index >= 0 {
			path = index(path, seg.index)
		} else if k := resolve(seg.key); k != nil && k.ShortTag() != "!!merge" {
			path = join(path, k.Value)
		}
	}
	return path
}

// placeholders checks the placeholders of text, the value of n, against
// steps: only steps with an index below before may be named.
func (s *state) placeholders(n *yaml.Node, path, text string, steps []*engine.StepDef, before int) {
	phs, err := engine.ParsePlaceholders(text)
	if pe, ok := errors.AsType[*engine.PlaceholderError](err); ok {
		s.add(lineOf(n, text, pe.Offset), path, err.Error())
		return
	}
	if err != nil {
		s.errorf(n, path, "%s", err)
		return
	}
	for _, ph := range phs {
		if err := engine.CheckPlaceholder(ph, steps, before); err != nil {
			s.add(lineOf(n, text, ph.Start), path, err.Error())
		}
	}
}

// lineOf returns the line of byte off of n's value. Only literal block
// scalars (|) keep their lines as written; others report their first line.
func lineOf(n *yaml.Node, text string, off int) int {
	if n.Style&yaml.LiteralStyle == 0 {
		return n.Line
	}
	return n.Line + 1 + strings.Count(text[:off], "\n")
}

// lonePlaceholder reports whether a skip_llm_if is agent-queue's form: one
// placeholder alone, true when its value is true, yes or 1. Anything else
// is a condition.
func lonePlaceholder(v string) bool {
	v = strings.TrimSpace(v)
	phs, err := engine.ParsePlaceholders(v)
	return err == nil && len(phs) == 1 && phs[0].Start == 0 && phs[0].End == len(v)
}

// check decodes a hook's check: the step (by name, step_N or index)
// whose failure marks its runs check_failed (engine/check.go).
func (s *state) check(n *yaml.Node, path string, h *engine.Hook) {
	ref, ok := s.text(n, path)
	if !ok {
		return
	}
	var names []string
	for _, d := range h.Steps {
		if d.Name == ref || "step_"+strconv.Itoa(d.Index) == ref || n.ShortTag() == "!!int" && strconv.Itoa(d.Index) == ref {
			h.Check = d
			return
		}
		names = append(names, d.CheckName())
	}
	if len(names) == 0 {
		s.errorf(n, path, "names step %q, but the hook has no steps", ref)
		return
	}
	s.errorf(n, path, "no step %q (want a step's name, step_N or its index: %s)", ref, strings.Join(names, ", "))
}
