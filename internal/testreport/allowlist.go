package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Allowlist is the set of skipped tests a run may have: one entry a line,
// the package's import path, the test's name as go test prints it (a
// subtest with its parents: TestPerms/file_owned_by_another_user) and why
// the skip is expected, separated by blanks. Blank lines and lines
// starting with # are ignored.
type Allowlist struct {
	entries []allowEntry
	index   map[testID]int
}

type allowEntry struct {
	id     testID
	where  string // file:line
	reason string
}

// testID names one test of one package.
type testID struct{ pkg, test string }

func (id testID) String() string { return id.pkg + " " + id.test }

// ParseAllowlist reads an allowlist; name is the file's name for errors.
func ParseAllowlist(r io.Reader, name string) (*Allowlist, error) {
	a := &Allowlist{index: map[testID]int{}}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		where := fmt.Sprintf("%s:%d", name, line)
		f := strings.Fields(text)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s: want `package TestName reason`, got %q", where, text)
		}
		if !strings.HasPrefix(f[1], "Test") {
			return nil, fmt.Errorf("%s: %q is not a test's name (TestName, or TestName/subtest)", where, f[1])
		}
		id := testID{f[0], f[1]}
		if i, dup := a.index[id]; dup {
			return nil, fmt.Errorf("%s: %s is listed already at %s", where, id, a.entries[i].where)
		}
		a.index[id] = len(a.entries)
		a.entries = append(a.entries, allowEntry{id: id, where: where, reason: strings.Join(f[2:], " ")})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return a, nil
}

// allows reports whether the list names the test.
func (a *Allowlist) allows(id testID) bool {
	if a == nil {
		return false
	}
	_, ok := a.index[id]
	return ok
}
