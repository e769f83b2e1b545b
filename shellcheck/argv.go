package shellcheck

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hookd/hookd/engine"
)

// DataTemplate reports whether tmpl holds a placeholder that is not a
// literal: its value is data.
func DataTemplate(tmpl string) bool {
	phs, _ := engine.ParsePlaceholders(tmpl)
	for _, p := range phs {
		if !p.IsLiteral() {
			return true
		}
	}
	return false
}

// CheckArgv applies the command rules to the list form: data may not
// name the program, nor be an argument a program runs as code (sh -c,
// eval, env/sudo/xargs/timeout... wrapping the command). It returns, per
// element, where its value would begin an argument (so a leading '-' is
// refused when the step runs), and the same for the env variables in
// taintedEnv that an inner shell's script (sh -c 'script') uses.
func CheckArgv(argv []string, taintedEnv map[string]bool) ([]string, map[string]string, error) {
	args := make([]callArg, len(argv))
	for i, a := range argv {
		phs, _ := engine.ParsePlaceholders(a)
		lit, isLit := a, true
		if len(phs) > 0 {
			var b strings.Builder
			last := 0
			for _, p := range phs {
				b.WriteString(a[last:p.Start])
				if p.IsLiteral() {
					b.WriteString(p.Literal)
				} else {
					isLit = false
				}
				last = p.End
			}
			b.WriteString(a[last:])
			lit = b.String()
		}
		args[i] = callArg{lit: lit, isLit: isLit, tainted: !isLit, lead: len(phs) > 0 && phs[0].Start == 0 && !phs[0].IsLiteral()}
		if len(phs) > 0 {
			args[i].prefix = a[:phs[0].Start]
		}
	}
	r := analyzeCall(args)
	opt := make([]string, len(argv))
	for i, a := range args {
		if !a.tainted {
			continue
		}
		if why, bad := r.refused(i); bad {
			return nil, nil, fmt.Errorf("element %d (%s): data from a placeholder is %s", i, argv[i], why)
		}
		if a.lead && r.optionPosition(args, i) {
			opt[i] = r.where(args, i)
		}
	}
	if len(r.scripts) == 0 {
		return opt, nil, nil
	}
	tainted := map[string]map[string]bool{}
	for name := range taintedEnv {
		tainted[name] = map[string]bool{name: true}
	}
	envOpt := map[string]string{}
	for _, script := range r.scripts {
		t, d := tainted, map[string]string(nil)
		if script.argv >= 0 {
			roots := map[string]bool{}
			for k := script.argv; k < len(args); k++ {
				if args[k].tainted {
					roots["command["+strconv.Itoa(k)+"]"] = true
				}
			}
			if len(roots) > 0 {
				t, d = withPositional(tainted, nil, roots, "passed to the inner shell as a positional parameter")
			}
		}
		o, err := checkInnerScript(script.text, t, d, nil, nil, 1)
		if err != nil {
			return nil, nil, err
		}
		for name, where := range o {
			if taintedEnv[name] && envOpt[name] == "" {
				envOpt[name] = where
			}
		}
	}
	return opt, envOpt, nil
}

// CheckEnvName refuses a name a step may not set in its env: empty, with
// "=" or NUL, or one of the names that carry placeholder values.
func CheckEnvName(name string) error {
	if name == "" {
		return errors.New("empty variable name")
	}
	if strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("%q: a variable name cannot contain '=' or NUL", name)
	}
	if n, ok := strings.CutPrefix(name, placeholderVarPrefix); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return fmt.Errorf("%s: %sN names are reserved for placeholder values", name, placeholderVarPrefix)
	}
	return nil
}
