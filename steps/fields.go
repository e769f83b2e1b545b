package steps

import (
	"fmt"
	"strings"

	"github.com/hookd/hookd/engine"
)

// fieldErr reports a bad value of field, located by cfg (file and line,
// from the hook loader's).
func fieldErr(cfg engine.Decoder, field, format string, args ...any) error {
	return cfg.Errorf(field, format, args...)
}

// checkPathTemplate checks a path field that may hold placeholders.
func checkPathTemplate(cfg engine.Decoder, field, p string, required bool) error {
	if strings.TrimSpace(p) == "" {
		if required {
			return fieldErr(cfg, field, "required")
		}
		return nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return fieldErr(cfg, field, "contains a NUL byte")
	}
	if _, err := engine.ParsePlaceholders(p); err != nil {
		return fieldErr(cfg, field, "%v", err)
	}
	return nil
}

// checkRoots checks a step's extra roots: fixed paths, relative to the
// hook's workdir or absolute, without placeholders (which would let an
// event widen what the step may read).
func checkRoots(cfg engine.Decoder, roots []string) ([]string, error) {
	for i, r := range roots {
		field := fmt.Sprintf("roots[%d]", i)
		if strings.TrimSpace(r) == "" {
			return nil, fieldErr(cfg, field, "must not be empty")
		}
		if strings.IndexByte(r, 0) >= 0 {
			return nil, fieldErr(cfg, field, "contains a NUL byte")
		}
		if strings.Contains(r, "{{") {
			return nil, fieldErr(cfg, field, "must not hold placeholders: the roots a hook may read are fixed in its file")
		}
	}
	return roots, nil
}

// kindOf names the YAML kind of a decoded value, for messages.
func kindOf(v any) string {
	switch x := v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case bool, int, int64, uint64, float64:
		return fmt.Sprintf("%T %v", x, x)
	}
	return fmt.Sprintf("%T", v)
}
