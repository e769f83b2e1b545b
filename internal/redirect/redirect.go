package redirect

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects a client follows when the client it
// was made from sets no limit of its own (net/http's default).
const maxRedirects = 10

// RefusedError is a redirect to another origin, refused.
type RefusedError struct {
	From, To *url.URL // the request redirected, and where it was sent
}

// Error names both origins, not the whole URLs: a webhook's path or an
// MCP server's query may hold a secret, and so may a relocation of it.
func (e *RefusedError) Error() string {
	return "refused a redirect from " + Origin(e.From) + " to " + Origin(e.To) +
		": another origin (hookd follows redirects only within the origin a request was sent to)"
}

// Client returns a copy of base that follows the rule: it checks each
// redirect with Check before base's own CheckRedirect, if any (without
// one, it stops after 10 redirects, as net/http does).
func Client(base *http.Client) *http.Client {
	c := *base
	own := base.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := Check(req, via); err != nil {
			return err
		}
		if own != nil {
			return own(req, via)
		}
		if len(via) >= maxRedirects {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// Check is the rule as an http.Client's CheckRedirect: req, about to be
// sent, is refused unless it has the origin of the request redirected
// (every earlier hop was checked the same way, so that is the origin of
// the first request). It drops the Referer net/http sets on a redirect.
func Check(req *http.Request, via []*http.Request) error {
	req.Header.Del("Referer")
	if len(via) == 0 {
		return nil
	}
	if from := via[len(via)-1].URL; !SameOrigin(from, req.URL) {
		return &RefusedError{From: from, To: req.URL}
	}
	return nil
}

// SameOrigin reports whether a and b have one origin: the same scheme,
// host (compared without case) and port, a missing port being the
// scheme's default.
func SameOrigin(a, b *url.URL) bool {
	return Origin(a) == Origin(b)
}

// Origin is u's origin, scheme://host:port, lower case, with the scheme's
// default port filled in.
func Origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
