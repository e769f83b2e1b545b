// Package redirect is hookd's one rule for the redirects of requests
// that carry a credential: those to MCP servers over HTTP (configured
// headers such as Authorization) and webhook notifications (whose URL is
// often the secret).
//
// A redirect within the origin the request was sent to (same scheme, host
// and port) is followed, with the request's headers; one to another origin
// is refused with a *RefusedError naming both origins; no request carries
// a Referer. Loopback and private addresses are not refused as such: local
// MCP servers are common.
package redirect
