package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hookd/hookd/engine"
	"gopkg.in/yaml.v3"
)

var notifyKeys = []string{"name", "url", "url_env", "format", "on", "template"}

// notify decodes a notify: list of webhook targets, in hookd.yaml or a
// hook file. It never returns nil for a list, so an empty list is told
// apart from none.
func (s *state) notify(n *yaml.Node, path string, steps []*engine.StepDef) []engine.NotifyTarget {
	if n.Kind != yaml.SequenceNode {
		s.errorf(n, path, "expected a list of webhook targets like [{format: slack, url_env: SLACK_URL}], got %s", describe(n))
		return nil
	}
	out := make([]engine.NotifyTarget, 0, len(n.Content))
	for i, item := range n.Content {
		p := index(path, i)
		item = resolve(item)
		if isNull(item) {
			s.errorf(n.Content[i], p, "expected a webhook target, got null")
			continue
		}
		f := s.fields(item, p, notifyKeys, nil)
		t := engine.NotifyTarget{Format: engine.NotifyGeneric, On: []string{engine.OutcomeFailed}}
		f.decode("name", &t.Name)
		if tn, ok := f.decode("template", &t.Template); ok {
			if err := engine.CheckNotifyTemplate(t.Template, steps); err != nil {
				s.errorf(tn, join(p, "template"), "%s", err)
			}
		}
		if fn, ok := f.decode("format", &t.Format); ok && !slices.Contains(engine.NotifyFormats, t.Format) {
			s.errorf(fn, join(p, "format"), "must be %s (got %q)", orList(engine.NotifyFormats), t.Format)
		}
		u, hasURL := f.decode("url", &t.URL)
		e, hasEnv := f.decode("url_env", &t.URLEnv)
		switch {
		case hasURL && hasEnv:
			s.errorf(e, join(p, "url_env"), "give url or url_env, not both")
		case hasURL:
			if err := checkURL(t.URL); err != nil {
				// The URL may hold a secret: do not repeat it.
				s.errorf(u, join(p, "url"), "not an http(s) URL")
			}
		case hasEnv:
			if !envName.MatchString(t.URLEnv) {
				s.errorf(e, join(p, "url_env"), "%q is not an environment variable name", t.URLEnv)
			}
		case u == nil && e == nil:
			s.add(item.Line, p, "needs url or url_env (the environment variable that holds the webhook URL)")
		}
		if on := f.get("on"); on != nil {
			var list []string
			if s.decodeAt(on, join(p, "on"), &list) {
				for j, o := range list {
					if !slices.Contains(engine.NotifyOutcomes, o) {
						s.errorf(on.Content[j], index(join(p, "on"), j), "must be %s (got %q)", orList(engine.NotifyOutcomes), o)
					}
				}
				if len(list) == 0 {
					s.errorf(on, join(p, "on"), "must name at least one outcome (leave it out for [failed])")
				}
				t.On = list
			}
		}
		out = append(out, t)
	}
	return out
}

// orList joins values as "a, b or c".
func orList(vs []string) string {
	if len(vs) < 2 {
		return strings.Join(vs, "")
	}
	return fmt.Sprintf("%s or %s", strings.Join(vs[:len(vs)-1], ", "), vs[len(vs)-1])
}

// apiSettings decodes token_env and token_file, the bearer token of the
// TCP API. The token itself never appears in hookd.yaml.
func (s *state) apiSettings(f *fields, d *Daemon, dir string) {
	e, hasEnv := f.decode("token_env", &d.TokenEnv)
	if hasEnv && !envName.MatchString(d.TokenEnv) {
		s.errorf(e, "token_env", "%q is not an environment variable name", d.TokenEnv)
	}
	if n, ok := f.decode("token_file", &d.TokenFile); ok {
		switch {
		case d.TokenFile == "":
			s.errorf(n, "token_file", "must not be empty")
		case hasEnv:
			s.errorf(n, "token_file", "give token_env or token_file, not both")
		case filepath.IsAbs(d.TokenFile):
			d.TokenFile = filepath.Clean(d.TokenFile)
		default:
			d.TokenFile = filepath.Join(dir, d.TokenFile)
		}
	}
}
