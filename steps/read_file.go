package steps

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/hookd/hookd/engine"
	"github.com/hookd/hookd/process"
	"github.com/hookd/hookd/redact"
)

// DefaultMaxFileBytes is how much of a file read_file keeps when the step
// sets no max_bytes.
const DefaultMaxFileBytes = 64 << 10

func init() {
	engine.RegisterStep("read_file", engine.DeclaredKind{Build: newReadFile,
		Fields: []string{"content", "path", "size", "lines", "truncated", "binary"}})
}

type readFileConfig struct {
	Path     string   `yaml:"path"`
	MaxLines int      `yaml:"max_lines"`
	MaxBytes int      `yaml:"max_bytes"`
	Tail     bool     `yaml:"tail"`
	Roots    []string `yaml:"roots"`
}

// readFileStep reads one text file inside the hook's workdir or an extra
// root the step allows.
type readFileStep struct {
	def      *engine.StepDef
	path     string // may hold placeholders
	maxLines int    // 0: no line limit
	maxBytes int
	tail     bool
	roots    []string
}

func newReadFile(def *engine.StepDef, cfg engine.Decoder) (engine.Step, error) {
	var c readFileConfig
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	s := &readFileStep{def: def, path: c.Path, maxLines: c.MaxLines, maxBytes: c.MaxBytes, tail: c.Tail}
	if err := checkPathTemplate(cfg, "path", c.Path, true); err != nil {
		return nil, err
	}
	if c.MaxLines < 0 {
		return nil, fieldErr(cfg, "max_lines", "must be >= 0 (got %d)", c.MaxLines)
	}
	if c.MaxBytes < 0 {
		return nil, fieldErr(cfg, "max_bytes", "must be > 0 (got %d)", c.MaxBytes)
	}
	if s.maxBytes == 0 {
		s.maxBytes = DefaultMaxFileBytes
	}
	roots, err := checkRoots(cfg, c.Roots)
	if err != nil {
		return nil, err
	}
	s.roots = roots
	return s, nil
}

// Templates returns the strings of the step that may hold placeholders.
func (s *readFileStep) Templates() []string { return []string{s.path} }

// Run reads the file. A missing file, a directory, a path outside the
// roots and an unresolved placeholder are errors.
func (s *readFileStep) Run(ctx context.Context, env *engine.StepEnv) (*engine.StepResult, error) {
	res := newResult(s.def, map[string]any{
		"content": "", "path": "", "size": int64(0), "lines": 0, "binary": false,
	})
	p, err := engine.Expand(s.path, scopeOf(env), nil)
	if err != nil {
		return fail(res, fmt.Errorf("path: %w", err))
	}
	roots, err := NewRoots(env.Workdir, s.roots)
	if err != nil {
		return fail(res, err)
	}
	f, real, err := roots.Open(p)
	if err != nil {
		return fail(res, err)
	}
	defer f.Close()
	res.Fields["path"] = roots.Rel(real)
	fi, err := f.Stat()
	if err != nil {
		return fail(res, fmt.Errorf("stat %q: %w", p, err))
	}
	if fi.IsDir() {
		return fail(res, fmt.Errorf("%q is a directory (list it with list_files)", p))
	}
	if !fi.Mode().IsRegular() {
		return fail(res, fmt.Errorf("%q is not a regular file (%s)", p, fi.Mode().Type()))
	}
	size := fi.Size()
	res.Fields["size"] = size

	data, cut, err := s.read(f, size, env.Redactor)
	if err != nil {
		return fail(res, fmt.Errorf("read %q: %w", p, err))
	}
	if ctx.Err() != nil {
		return fail(res, context.Cause(ctx))
	}
	var content string
	switch {
	case bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0:
		res.Fields["binary"] = true
		content = fmt.Sprintf("[hookd: %s is a binary file of %d bytes]", res.Fields["path"], size)
	case cut:
		res.Truncated = true
		res.Fields["lines"] = countLines(data)
		where := "first"
		if s.tail {
			where = "last"
		}
		marker := fmt.Sprintf("[hookd: truncated: the %s %d lines (%d bytes) of %d bytes]", where, countLines(data), len(data), size)
		if s.tail {
			content = marker + "\n" + string(data)
		} else {
			content = string(data)
			if content != "" && !strings.HasSuffix(content, "\n") {
				content += "\n"
			}
			content += marker
		}
	default:
		res.Fields["lines"] = countLines(data)
		content = string(data)
	}
	res.Output = content
	res.Fields["content"] = content
	return done(res)
}

// read returns what the step keeps of the file, redacted before it is
// cut, and whether that is less than the whole file.
func (s *readFileStep) read(f io.ReadSeeker, size int64, red *redact.Redactor) ([]byte, bool, error) {
	if s.tail {
		return s.readTail(f, size, red)
	}
	data, cut, err := process.ReadHead(f, s.maxBytes, red)
	if err != nil {
		return nil, false, err
	}
	if s.maxLines > 0 {
		if i := nthLineEnd(data, s.maxLines); i >= 0 && i+1 < len(data) {
			data, cut = data[:i+1], true
		}
	}
	return data, cut, nil
}

// readTail keeps the end of the file: at most maxBytes, starting at a
// line boundary when it had to seek, and at most maxLines lines.
func (s *readFileStep) readTail(f io.ReadSeeker, size int64, red *redact.Redactor) ([]byte, bool, error) {
	data, cut, err := process.ReadTail(f, size, s.maxBytes, red)
	if err != nil {
		return nil, false, err
	}
	if cut {
		if i := bytes.IndexByte(data, '\n'); i >= 0 && i+1 < len(data) {
			data = data[i+1:]
		} else {
			for len(data) > 0 && !utf8.RuneStart(data[0]) {
				data = data[1:]
			}
		}
	}
	if s.maxLines > 0 {
		body := bytes.TrimSuffix(data, []byte("\n"))
		n := 0
		for i := len(body) - 1; i >= 0; i-- {
			if body[i] == '\n' {
				n++
				if n == s.maxLines {
					data, cut = data[i+1:], true
					break
				}
			}
		}
	}
	return data, cut, nil
}

// nthLineEnd returns the index of the n-th newline in b, or -1.
func nthLineEnd(b []byte, n int) int {
	off := 0
	for k := 0; k < n; k++ {
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off - 1
}

// countLines counts lines, a last line without a newline included.
func countLines(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
