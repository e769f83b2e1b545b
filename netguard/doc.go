// Package netguard keeps hookd's own HTTP clients — the http step, the
// model's http_get tool — off addresses that are not public: loopback,
// private, link-local (the cloud metadata service), multicast and the
// like. It checks the address each connection is made to, after DNS, so
// a name that resolves (or re-resolves) to such an address is refused
// too, and it checks every redirect.
package netguard
