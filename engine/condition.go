package engine

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"
)

// Condition is a boolean expression over a run's context, in the
// expr-lang/expr language: `steps.tests.exit_code == 0`,
// `event.env == "prod" && event.service in ["api", "web"]`. Its names are
// the placeholders' paths, bare: event.x, steps.NAME.field, step_N.field,
// hook, run, trigger, now, last_run_time. It is type-checked when the hook
// loads and evaluated within a cost bound (no loops; at most MaxCondNodes
// nodes; the expr VM's memory budget).
type Condition struct {
	Source string
	prog   *vm.Program
}

// Bounds of a condition.
const (
	MaxCondLen   = 4096 // bytes of source
	MaxCondNodes = 256  // nodes of its syntax tree
)

// typed fields of step results, with their types in conditions; other
// fields of a declaring kind are of any type.
var condFieldTypes = map[string]reflect.Type{
	"output": reflect.TypeFor[string](), "error": reflect.TypeFor[string](), "name": reflect.TypeFor[string](),
	"type": reflect.TypeFor[string](), "exit_code": reflect.TypeFor[int](), "status_code": reflect.TypeFor[int](),
	"count": reflect.TypeFor[int](), "timed_out": reflect.TypeFor[bool](), "truncated": reflect.TypeFor[bool](),
	"duration_ms": reflect.TypeFor[int64](), "stdout": reflect.TypeFor[string](), "stderr": reflect.TypeFor[string](),
	"body": reflect.TypeFor[string](),
}

var (
	anyType    = reflect.TypeFor[any]()
	mapAnyType = reflect.TypeFor[map[string]any]()
)

// CompileCondition type-checks src against a hook's steps: the steps whose
// index is below before may be named (with the fields their kind
// declares); event is an object of unknown shape. An unknown name or
// field, a type error (`steps.tests.exit_code == "0"`) or a result that is
// not a boolean is an error.
func CompileCondition(src string, steps []*StepDef, before int) (*Condition, error) {
	src = strings.TrimSpace(src)
	switch {
	case src == "":
		return nil, fmt.Errorf("empty condition")
	case len(src) > MaxCondLen:
		return nil, fmt.Errorf("condition is %d bytes long (limit %d)", len(src), MaxCondLen)
	case strings.Contains(src, "{{"):
		return nil, fmt.Errorf("a condition names values bare, without {{ }}: write steps.check.exit_code == 0, not {{steps.check.exit_code}} == 0")
	}
	if err := checkCondNames(src, steps, before); err != nil {
		return nil, fmt.Errorf("condition %q: %w", src, err)
	}
	if err := checkCondCost(src); err != nil {
		return nil, fmt.Errorf("condition %q: %w", src, err)
	}
	opts := []expr.Option{expr.AsBool(), expr.MaxNodes(MaxCondNodes), expr.DisableBuiltin("repeat")}
	if _, err := expr.Compile(src, append(opts, expr.Env(reflect.New(condEnvType(steps, before)).Elem().Interface()))...); err != nil {
		return nil, fmt.Errorf("condition %q: %s", src, condError(err))
	}
	prog, err := expr.Compile(src, append(opts, expr.Env(map[string]any{}), expr.AllowUndefinedVariables())...)
	if err != nil {
		return nil, fmt.Errorf("condition %q: %s", src, condError(err))
	}
	return &Condition{Source: src, prog: prog}, nil
}

// checkCondNames checks the paths a condition names (event.x,
// steps.NAME.field, step_N.field) as placeholders are checked, so that
// their errors read the same: no step named ..., its results have no
// field ... (they have ...).
func checkCondNames(src string, steps []*StepDef, before int) error {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil // Compile reports it
	}
	v := &condNames{steps: steps, before: before}
	ast.Walk(&tree.Node, v)
	return v.err
}

// checkCondCost refuses a condition whose cost grows with a power of the
// event's size: an iterating builtin (all, any, filter, map, count ...)
// inside another one's predicate must iterate something built from the
// element (#, .field): iterating event.x there makes an event of N items
// cost N×N steps (N×N×N a level deeper), and expr has no step bound.
// A where: runs in the engine's loop, so one such event of a few
// kilobytes stopped every hook for a minute.
func checkCondCost(src string) error {
	tree, err := parser.Parse(src)
	if err != nil {
		return nil // Compile reports it
	}
	var grows string
	ast.Walk(&tree.Node, condVisitor(func(n ast.Node) {
		switch x := n.(type) {
		case *ast.VariableDeclaratorNode:
			grows = "let"
		case *ast.BuiltinNode:
			if x.Name == "reduce" {
				grows = "reduce"
			}
		}
	}))
	if grows != "" {
		return fmt.Errorf("%s is not available in a condition: a value built from itself (let b = a + a; reduce with #acc + #acc) "+
			"doubles at each step, past any bound (16 lets made 64 MB of a 1 KB event)", grows)
	}
	// A regular expression costs its length times the text's to run
	// (RE2 is linear in each, not in their sum): a pattern from the event
	// or a step's output, 50 KB against 50 KB of text, held the loop 20 s.
	dynamic := false
	ast.Walk(&tree.Node, condVisitor(func(n ast.Node) {
		if b, ok := n.(*ast.BinaryNode); ok && b.Operator == "matches" {
			if _, lit := b.Right.(*ast.StringNode); !lit {
				dynamic = true
			}
		}
	}))
	if dynamic {
		return fmt.Errorf("the pattern of matches must be written in the hook, one quoted string (x matches \"^v[0-9]+\"): " +
			"a pattern from the event or a step costs its length times the text's (50 KB against 50 KB held the engine 20 s)")
	}
	var bad *ast.BuiltinNode
	ast.Walk(&tree.Node, condVisitor(func(n ast.Node) {
		for _, p := range predicates(n) {
			ast.Walk(&p.Node, condVisitor(func(in ast.Node) {
				b, ok := in.(*ast.BuiltinNode)
				if ok && bad == nil && len(predicates(b)) > 0 && len(b.Arguments) > 0 && !hasPointer(b.Arguments[0]) {
					bad = b
				}
			}))
		}
	}))
	if bad != nil {
		return fmt.Errorf("%s(...) inside another builtin's predicate iterates something not built from its element "+
			"(#, .field): the cost would grow with the square of the event's size; iterate the element's own items "+
			"(any(event.commits, {any(.files, {...})})), or test the lists one after the other", bad.Name)
	}
	if op := outsideWork(tree.Node); op != "" {
		return fmt.Errorf("%s inside a builtin's predicate works on a value from outside its element (event..., steps...): "+
			"it runs once per item, so its cost would be the list's length times that value's size (`any(event.a, {# in event.a})` "+
			"held the engine for 3.7 s on 20,000 items, a regular expression over a long event string 30 ms an item); "+
			"in a predicate, compare such a value (==, <, ...), and compute anything else outside (let the hook test it beside the iteration)", op)
	}
	return nil
}

// cheapOps are the operators a predicate may apply to a value from
// outside its element: their cost is bounded by the element, or constant.
var cheapOps = map[string]bool{
	"==": true, "!=": true, "<": true, ">": true, "<=": true, ">=": true,
	"and": true, "or": true, "&&": true, "||": true, "??": true,
	"-": true, "*": true, "/": true, "%": true, "**": true, "^": true,
}

// outsideWork names the first operation inside a predicate that works on
// a value read from outside the element (event, steps), other than a
// comparison: "" when there is none.
func outsideWork(root ast.Node) string {
	found := ""
	ast.Walk(&root, condVisitor(func(n ast.Node) {
		for _, p := range predicates(n) {
			ast.Walk(&p.Node, condVisitor(func(in ast.Node) {
				if found != "" {
					return
				}
				switch x := in.(type) {
				case *ast.BinaryNode:
					if !cheapOps[x.Operator] && (outside(x.Left) || outside(x.Right)) {
						found = "the operator " + x.Operator
					}
				case *ast.CallNode:
					for _, a := range x.Arguments {
						if outside(a) {
							found = "a call"
							if id, ok := x.Callee.(*ast.IdentifierNode); ok {
								found = id.Value + "(...)"
							}
						}
					}
				case *ast.BuiltinNode:
					// len too: a string's is counted in runes, over all of it.
					for _, a := range x.Arguments {
						if _, ok := a.(*ast.PredicateNode); !ok && outside(a) {
							found = x.Name + "(...)"
						}
					}
				}
			}))
		}
	}))
	return found
}

// outside reports whether n reads a value from outside a predicate's
// element that may be large: the event or a step's results, not through
// the element (#, .field).
func outside(n ast.Node) bool {
	if hasPointer(n) {
		return false
	}
	reads := false
	ast.Walk(&n, condVisitor(func(x ast.Node) {
		if id, ok := x.(*ast.IdentifierNode); ok && (id.Value == "event" || id.Value == "steps" || strings.HasPrefix(id.Value, "step_")) {
			reads = true
		}
	}))
	return reads
}

// predicates are the closures of an iterating builtin, none for another node.
func predicates(n ast.Node) []*ast.PredicateNode {
	b, ok := n.(*ast.BuiltinNode)
	if !ok {
		return nil
	}
	var ps []*ast.PredicateNode
	for _, a := range b.Arguments {
		if p, ok := a.(*ast.PredicateNode); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

// hasPointer reports whether n reads a predicate's element (#, #acc ...).
func hasPointer(n ast.Node) bool {
	found := false
	ast.Walk(&n, condVisitor(func(x ast.Node) {
		if _, ok := x.(*ast.PointerNode); ok {
			found = true
		}
	}))
	return found
}

// condVisitor calls a function on every node of a walk.
type condVisitor func(ast.Node)

func (f condVisitor) Visit(n *ast.Node) { f(*n) }

type condNames struct {
	steps  []*StepDef
	before int
	err    error
}

func (c *condNames) Visit(n *ast.Node) {
	m, ok := (*n).(*ast.MemberNode)
	if !ok || c.err != nil {
		return
	}
	path, ok := memberPath(m)
	if !ok {
		return
	}
	root, _, _ := strings.Cut(path, ".")
	if root == "steps" || strings.HasPrefix(root, "step_") || root == "event" {
		if err := checkRef(path, c.steps, c.before); err != nil {
			c.err = err
			if fe, ok := errors.AsType[*fieldError](err); ok && !fe.typo() {
				// steps.check.used_pct over a step that prints the number.
				c.err = fmt.Errorf("%w; to compare a value in a step's output, convert the text: "+
					"fromJSON(%s).%s for JSON, int(trim(%s)) for a number alone", err,
					fieldOf(path, fe.fields, "body", "stdout", "output"), fe.field, fieldOf(path, fe.fields, "stdout", "body", "output"))
			}
		}
	}
}

// fieldOf is path with its field replaced by the first of want that
// fields holds: steps.check.used_pct, an http step's, is steps.check.body.
func fieldOf(path string, fields []string, want ...string) string {
	segs := strings.Split(path, ".")
	base := segs[0] // step_N
	if base == "steps" && len(segs) > 1 {
		base += "." + segs[1]
	}
	for _, w := range want {
		if slices.Contains(fields, w) {
			return base + "." + w
		}
	}
	return base + ".output"
}

// memberPath is a chain a.b.c of constant members on a name, dotted.
func memberPath(n ast.Node) (string, bool) {
	switch x := n.(type) {
	case *ast.IdentifierNode:
		return x.Value, true
	case *ast.MemberNode:
		prop, ok := x.Property.(*ast.StringNode)
		if !ok {
			return "", false
		}
		base, ok := memberPath(x.Node)
		return base + "." + prop.Value, ok
	}
	return "", false
}

// condError is expr's error on one line (it draws the source and a caret
// below).
// textWithNumber matches expr's errors for a string compared with a
// number: at load "mismatched types string and int", when run "string > int".
var textWithNumber = regexp.MustCompile(`mismatched types (string and (int|float64)|(int|float64) and string)|invalid operation: (string \S+ (int|float64)|(int|float64) \S+ string)`)

func condError(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	switch {
	case strings.Contains(msg, `unexpected token Operator("=")`):
		msg += "; = assigns nothing here: compare with =="
	case textWithNumber.MatchString(msg):
		msg += `; one side is text and the other a number: a number is written without quotes (exit_code == 0), and text from a step's output is converted with int(trim(steps.NAME.stdout)) or float(trim(...))`
	}
	return msg
}

// condEnvType is the type conditions are checked against: a struct
// whose fields carry the names of the placeholder roots.
func condEnvType(steps []*StepDef, before int) reflect.Type {
	str := reflect.TypeFor[string]()
	fields := []reflect.StructField{
		condField(0, "event", mapAnyType), condField(1, "hook", str), condField(2, "run", str),
		condField(3, "trigger", str), condField(4, "now", str), condField(5, "last_run_time", str),
	}
	var named []reflect.StructField
	for _, d := range steps {
		if d.Index >= before {
			continue
		}
		t := stepType(d.Type)
		fields = append(fields, condField(len(fields), "step_"+strconv.Itoa(d.Index), t))
		if d.Name != "" {
			named = append(named, condField(len(named), d.Name, t))
		}
	}
	fields = append(fields, condField(len(fields), "steps", reflect.StructOf(named)))
	return reflect.StructOf(fields)
}

func condField(i int, name string, t reflect.Type) reflect.StructField {
	return reflect.StructField{Name: "F" + strconv.Itoa(i), Type: t, Tag: reflect.StructTag(`expr:"` + name + `"`)}
}

// stepType is the type of a step's result in conditions: a struct of the
// fields its kind declares, or an object of unknown shape for a kind that
// declares none.
func stepType(kind string) reflect.Type {
	names := slices.Clone(kindFields(kind))
	if names == nil {
		return mapAnyType
	}
	slices.Sort(names)
	names = slices.Compact(names)
	fields := make([]reflect.StructField, len(names))
	for i, n := range names {
		t := condFieldTypes[n]
		if t == nil {
			t = anyType
		}
		fields[i] = condField(i, n, t)
	}
	return reflect.StructOf(fields)
}

// Eval evaluates the condition against scope. A value missing at run time
// (an event field that is not there, a step that did not run) is nil,
// which compares unequal to everything; an evaluation error (a nil
// compared with <) is returned.
func (c *Condition) Eval(scope *Scope) (bool, error) {
	out, err := expr.Run(c.prog, condEnv(scope))
	if err != nil {
		return false, fmt.Errorf("condition %q: %s", c.Source, condError(err))
	}
	b, _ := out.(bool)
	return b, nil
}

// condEnv is scope as the values a condition reads.
func condEnv(scope *Scope) map[string]any {
	ev := scope.Event
	if ev == nil {
		ev = map[string]any{}
	}
	env := map[string]any{
		"event": ev, "hook": scope.Hook, "run": scope.RunID, "trigger": scope.Trigger,
	}
	if !scope.Now.IsZero() {
		env["now"] = scope.Now.Format("2006-01-02T15:04:05Z07:00")
	}
	if !scope.LastRunTime.IsZero() {
		env["last_run_time"] = scope.LastRunTime.Format("2006-01-02T15:04:05Z07:00")
	}
	named := map[string]any{}
	for name, i := range scope.StepNames {
		if i < len(scope.Steps) && scope.Steps[i] != nil {
			named[name] = stepValues(scope.Steps[i])
		}
	}
	for i, r := range scope.Steps {
		if r != nil {
			env["step_"+strconv.Itoa(i)] = stepValues(r)
		}
	}
	env["steps"] = named
	return env
}

// stepValues is a step result's fields by name, as placeholders see them.
func stepValues(r *StepResult) map[string]any {
	m := make(map[string]any, len(r.Fields)+8)
	for k, v := range r.Fields {
		m[k] = v
	}
	for _, n := range append(slices.Clone(CommonFields), typedFields...) {
		if v, ok := r.Field(n); ok {
			m[n] = v
		}
	}
	return m
}
