package pgurl

import (
	"errors"
	"strings"
)

// mask stands for a password in a described URL.
const mask = "xxxxx"

// url is a connection URL split into its raw (still percent-encoded)
// parts, as pgx's parseURLSettings splits it.
type url struct {
	scheme      string // "postgres://" or "postgresql://"
	user        string
	hasUserinfo bool // an @ ends a userinfo
	colon       bool // a : in the userinfo
	hasPassword bool // a password after it (an empty one is none)
	hosts       string
	path        string // after the /, up to the ?
	hasPath     bool
	query       []param
	hasQuery    bool
}

type param struct{ key, value string } // raw

// Error is a URL that does not parse; Reason says why without quoting it.
type Error struct{ Reason string }

func (e *Error) Error() string { return "the database URL does not parse: " + e.Reason }

func fail(reason string) error { return &Error{Reason: reason} }

// IsURL reports whether s is meant as a connection URL (postgres:// or
// postgresql://).
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Check reports, as an *Error, why s does not parse as a connection URL.
func Check(s string) error {
	_, err := split(s)
	return err
}

// Describe returns s with its password masked (the userinfo's and the
// password and sslpassword parameters'), for messages and logs; a URL
// that does not parse is not shown at all.
func Describe(s string) string {
	u, err := split(s)
	if err != nil {
		return "a database URL that does not parse"
	}
	var b strings.Builder
	b.WriteString(u.scheme)
	if u.hasUserinfo {
		b.WriteString(u.user)
		if u.colon {
			b.WriteByte(':')
		}
		if u.hasPassword {
			b.WriteString(mask)
		}
		b.WriteByte('@')
	}
	b.WriteString(u.hosts)
	if u.hasPath {
		b.WriteString("/" + u.path)
	}
	if u.hasQuery {
		b.WriteByte('?')
		for i, p := range u.query {
			if i > 0 {
				b.WriteByte('&')
			}
			v := p.value
			if k, _ := decode(p.key); secret(k) && p.value != "" {
				v = mask
			}
			b.WriteString(p.key + "=" + v)
		}
	}
	return b.String()
}

// secret reports whether the parameter named key holds a password.
func secret(key string) bool { return key == "password" || key == "sslpassword" }

// encodeHint is the advice of a reason for a character that must be
// percent-encoded in a user name or password.
const encodeHint = "; percent-encode @ / : ? # % and spaces in a user name or password (@ as %40, / as %2F), or set the password with PGPASSWORD or a passfile"

// split splits s as pgx does, and refuses what pgx would refuse for its
// syntax and what would leave a password's place ambiguous.
func split(s string) (*url, error) {
	u := &url{}
	var p string
	for _, scheme := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(s, scheme); ok {
			u.scheme, p = scheme, rest
			break
		}
	}
	if u.scheme == "" {
		return nil, fail("it does not begin with postgres:// or postgresql://")
	}
	if strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return nil, fail("it holds a space or a control character" + encodeHint)
	}
	// The userinfo ends at the first @ before any / (libpq's lookahead).
	if i := strings.IndexAny(p, "@/"); i >= 0 && p[i] == '@' {
		u.hasUserinfo = true
		var pw string
		u.user, pw, u.colon = strings.Cut(p[:i], ":")
		u.hasPassword = pw != ""
		p = p[i+1:]
		if _, err := decode(u.user); err != nil {
			return nil, fail("the user name has " + err.Error() + encodeHint)
		}
		if _, err := decode(pw); err != nil {
			return nil, fail("the password has " + err.Error() + encodeHint)
		}
	}
	end := strings.IndexAny(p, "/?")
	if end < 0 {
		end = len(p)
	}
	u.hosts, p = p[:end], p[end:]
	if err := checkHosts(u.hosts); err != nil {
		return nil, err
	}
	if rest, ok := strings.CutPrefix(p, "/"); ok {
		u.hasPath = true
		path, query, hasQuery := strings.Cut(rest, "?")
		u.path, p = path, ""
		if hasQuery {
			p = "?" + query
		}
		if strings.Contains(u.path, "@") {
			return nil, fail("the database name holds an @" + encodeHint)
		}
		if _, err := decode(u.path); err != nil {
			return nil, fail("the database name has " + err.Error())
		}
	}
	if rest, ok := strings.CutPrefix(p, "?"); ok {
		u.hasQuery = true
		for rest != "" {
			var pair string
			pair, rest, _ = strings.Cut(rest, "&")
			k, v, ok := strings.Cut(pair, "=")
			switch {
			case !ok:
				return nil, fail("a query parameter has no =")
			case strings.Contains(v, "="):
				return nil, fail("a query parameter has two = (percent-encode = in a value as %3D)")
			}
			key, err := decode(k)
			if err != nil {
				return nil, fail("a query parameter's name has " + err.Error())
			}
			if _, err := decode(v); err != nil {
				if secret(key) {
					return nil, fail("the " + key + " parameter has " + err.Error() + encodeHint)
				}
				return nil, fail("the " + key + " parameter has " + err.Error())
			}
			u.query = append(u.query, param{k, v})
		}
	}
	return u, nil
}

// checkHosts checks a host list: host[:port] or [v6]:port, separated by
// commas. An @ there, or a port that is not a number, is what an unencoded
// @, / or : in a password leaves.
func checkHosts(hosts string) error {
	if strings.Contains(hosts, "@") {
		return fail("the host holds an @" + encodeHint)
	}
	for _, h := range strings.Split(hosts, ",") {
		port := ""
		if rest, ok := strings.CutPrefix(h, "["); ok {
			addr, after, ok := strings.Cut(rest, "]")
			if !ok || addr == "" {
				return fail("an IPv6 host has no closing ] or is empty")
			}
			if after != "" {
				var ok bool
				if port, ok = strings.CutPrefix(after, ":"); !ok {
					return fail("an IPv6 host's ] is not followed by :PORT")
				}
			}
		} else {
			var name string
			name, port, _ = strings.Cut(h, ":")
			if _, err := decode(name); err != nil {
				return fail("the host has " + err.Error())
			}
		}
		if strings.ContainsFunc(port, func(r rune) bool { return r < '0' || r > '9' }) {
			return fail("a port is not a number" + encodeHint)
		}
	}
	return nil
}

// decode percent-decodes a URL part as pgx (and libpq) do: % must be
// followed by two hex digits, and %00 is refused.
func decode(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", errors.New("a % not followed by two hex digits (% itself is %25)")
		}
		c := unhex(s[i+1])<<4 | unhex(s[i+2])
		if c == 0 {
			return "", errors.New("%00, which is not allowed")
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
