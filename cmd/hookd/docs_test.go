package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docFence is a fenced code block of a documentation file; docCode an
// inline code span. Neither holds links.
var (
	docFence = regexp.MustCompile("(?ms)^```.*?^```")
	docCode  = regexp.MustCompile("`[^`\n]*`")
	docLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	docHead  = regexp.MustCompile(`(?m)^(#+) (.*)$`)
	notSlug  = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// docText returns a documentation file (a path from the repository's
// root) without its code blocks: its prose, headings and links.
func docText(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return docFence.ReplaceAllString(string(b), "")
}

// docAnchor is the anchor GitHub gives a heading: lower case, without
// punctuation, spaces as dashes.
func docAnchor(heading string) string {
	return strings.ReplaceAll(notSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(heading)), ""), " ", "-")
}

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file it names exists, and the #anchor it names is a heading of that
// file (or of the page itself), so a section moved or renamed breaks no
// link silently.
func TestDocLinks(t *testing.T) {
	anchors := map[string]map[string]bool{}
	for _, file := range docFiles(t) {
		anchors[file] = map[string]bool{}
		for _, m := range docHead.FindAllStringSubmatch(docText(t, file), -1) {
			anchors[file][docAnchor(m[2])] = true
		}
	}
	for _, file := range docFiles(t) {
		for _, m := range docLink.FindAllStringSubmatch(docCode.ReplaceAllString(docText(t, file), ""), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := file
			if path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				if _, err := os.Stat(filepath.Join("..", "..", target)); err != nil {
					t.Errorf("%s: the link %s: %v", file, link, err)
					continue
				}
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			if heads, ok := anchors[target]; !ok {
				t.Errorf("%s: the link %s leads into %s, which is not one of the documentation files", file, link, target)
			} else if !heads[anchor] {
				t.Errorf("%s: the link %s names no heading of %s", file, link, target)
			}
		}
	}
}

// TestDocContents checks that README.md and each page of docs/ open with
// a paragraph that says what the page holds, and a table of contents (a
// list of links before the first section, under "## Contents" or not)
// that names every "## " section of the page.
func TestDocContents(t *testing.T) {
	for _, file := range docFiles(t) {
		text := docText(t, file)
		title, rest, ok := strings.Cut(text, "\n")
		if !ok || !strings.HasPrefix(title, "# ") {
			t.Errorf("%s does not begin with a \"# \" title", file)
			continue
		}
		if first := strings.TrimLeft(rest, "\n"); first == "" || strings.ContainsAny(first[:1], "#-|*") {
			t.Errorf("%s: the title is not followed by a paragraph that says what the page holds", file)
		}
		top := text
		for _, m := range docHead.FindAllStringSubmatchIndex(text, -1) {
			if level, name := text[m[2]:m[3]], text[m[4]:m[5]]; level == "##" && name != "Contents" {
				top = text[:m[0]]
				break
			}
		}
		for _, m := range docHead.FindAllStringSubmatch(text, -1) {
			if m[1] == "##" && m[2] != "Contents" && !strings.Contains(top, "](#"+docAnchor(m[2])+")") {
				t.Errorf("%s: the table of contents at the top does not list the section %q (#%s)", file, m[2], docAnchor(m[2]))
			}
		}
	}
}

// TestReadmeSaysPreamble: the README's first hook says what the prompt
// preamble is for and what it costs per call, and links to the section of
// docs/hooks.md that says whether and how it can be changed.
func TestReadmeSaysPreamble(t *testing.T) {
	text := docText(t, "README.md")
	_, first, _ := strings.Cut(text, "\n## A first hook\n")
	first, _, _ = strings.Cut(first, "\n## ")
	for _, want := range []string{"preamble", "1,000 characters", "never instructions", "250 tokens", "every model call", "(docs/hooks.md#prompts)"} {
		if !strings.Contains(strings.Join(strings.Fields(first), " "), want) {
			t.Errorf("README.md's \"A first hook\" does not say %q", want)
		}
	}
}
