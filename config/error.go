package config

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hookd/hookd/internal/suggest"
)

// Error is one problem in a configuration file, located by file, line and
// field path. Its text is "file:line: field.path: message"; the line or
// the field is left out when unknown.
type Error struct {
	File  string // path as given to the loader
	Line  int    // 1-based; 0 when the problem is not tied to a line
	Field string // dotted path with [i] indexes counted from 0: steps[2].timeout
	Msg   string
	Err   error // underlying cause, if any
}

// Error returns "file:line: field: message".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(fileNameInLine.Replace(e.File))
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	switch {
	case e.Msg != "":
		b.WriteString(e.Msg)
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// fileNameInLine writes a line break in a file's name as \n or \r, so
// that an error stays on one line: a hook file named with a newline made
// one error read as two, the second a line of hookd's own seeming. (The
// terminal writer escapes the other control characters.)
var fileNameInLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

// Unwrap returns the underlying cause.
func (e *Error) Unwrap() error { return e.Err }

// Errors is the list of problems found in a file, in line order. Its text
// is one Error per line. errors.As finds the first *Error in it.
type Errors []*Error

// Error returns the errors, one per line.
func (l Errors) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap returns the errors, for errors.Is and errors.As.
func (l Errors) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// asErrors extracts the config errors carried by err, if any.
func asErrors(err error) (Errors, bool) {
	switch e := err.(type) {
	case Errors:
		return e, true
	case *Error:
		return Errors{e}, true
	}
	// A kind may wrap our errors with a prefix of its own; the located
	// errors say more than the prefix does.
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		var out Errors
		for _, x := range u.Unwrap() {
			l, ok := asErrors(x)
			if !ok {
				return nil, false
			}
			out = append(out, l...)
		}
		return out, len(out) > 0
	}
	if u, ok := err.(interface{ Unwrap() error }); ok && u.Unwrap() != nil {
		return asErrors(u.Unwrap())
	}
	return nil, false
}

// unknownField is the message for a key that is not one of known.
func unknownField(key string, known []string, listed []string) string {
	if s := suggest.Closest(key, known); s != "" {
		return fmt.Sprintf("unknown field; did you mean %s?", s)
	}
	if len(listed) == 0 {
		return "unknown field"
	}
	return fmt.Sprintf("unknown field (known: %s)", strings.Join(listed, ", "))
}
