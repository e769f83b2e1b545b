package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrAddrRefused is wrapped by the errors of the network guard: a
// connection to an address that is not public was refused.
var ErrAddrRefused = errors.New("netguard: address refused")

// DefaultMaxRedirects is how many redirects a guarded client follows when
// the caller asks for the default.
const DefaultMaxRedirects = 5

// AddrError says why the network guard refused an address.
type AddrError struct {
	Addr  netip.Addr
	Class string // "loopback", "private", "link-local", "metadata", ...
}

func (e *AddrError) Error() string {
	if e.Class == "metadata" {
		return fmt.Sprintf("refused to connect to %s: a cloud metadata address", e.Addr)
	}
	if alwaysRefused(e.Class) {
		return fmt.Sprintf("refused to connect to %s: %s address (refused even with allow_private: true)", e.Addr, e.Class)
	}
	return fmt.Sprintf("refused to connect to %s: %s address (private networks need allow_private: true)", e.Addr, e.Class)
}

// Unwrap makes the error match ErrAddrRefused.
func (e *AddrError) Unwrap() error { return ErrAddrRefused }

type netRange struct {
	prefix netip.Prefix
	class  string
}

// refusedRanges are the non-public ranges, checked in order (the
// metadata addresses first, so they are named as such).
var refusedRanges = func() []netRange {
	var out []netRange
	for _, r := range [][2]string{
		{"169.254.169.254/32", "metadata"}, // AWS, GCP, Azure, OpenStack, ...
		{"fd00:ec2::254/128", "metadata"},  // AWS over IPv6
		{"168.63.129.16/32", "metadata"},   // Azure wire server
		{"100.100.100.200/32", "metadata"}, // Alibaba Cloud
		{"0.0.0.0/8", "unspecified"},       // "this network"; 0.0.0.0 reaches the local host
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "shared (CGNAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "reserved"},
		{"192.0.2.0/24", "documentation"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation"},
		{"203.0.113.0/24", "documentation"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"}, // includes 255.255.255.255
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible"},
		{"100::/64", "discard"},
		{"2001::/32", "Teredo"},
		{"2001:db8::/32", "documentation"},
		{"fc00::/7", "private"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "site-local"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, netRange{netip.MustParsePrefix(r[0]), r[1]})
	}
	return out
}()

// CheckAddr returns nil when ip is a public unicast address, and an
// *AddrError naming its class otherwise: loopback, private (RFC 1918,
// fc00::/7), link-local, unspecified, multicast, CGNAT, reserved,
// documentation ranges and the cloud metadata addresses. IPv4 addresses
// embedded in IPv6 (mapped, NAT64, 6to4) are checked as IPv4.
func CheckAddr(ip net.IP) error {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return &AddrError{Class: "invalid"}
	}
	return checkAddr(a, false)
}

// alwaysRefused reports whether allow_private leaves a class refused: the
// cloud metadata addresses and all of link-local (169.254.0.0/16 and
// fe80::/10), where credential endpoints live besides 169.254.169.254
// (ECS task credentials at 169.254.170.2, instance link-local services).
func alwaysRefused(class string) bool { return class == "metadata" || class == "link-local" }

// checkAddr checks a; with allowPrivate only the metadata and link-local
// addresses are refused.
func checkAddr(a netip.Addr, allowPrivate bool) error {
	a = a.WithZone("")
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is6() {
		if v4, ok := embeddedV4(a); ok {
			if err := checkAddr(v4, allowPrivate); err != nil {
				return &AddrError{Addr: a, Class: err.(*AddrError).Class}
			}
		}
	}
	for _, r := range refusedRanges {
		if r.prefix.Contains(a) {
			if allowPrivate && !alwaysRefused(r.class) {
				return nil
			}
			return &AddrError{Addr: a, Class: r.class}
		}
	}
	return nil
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	nat64Loc  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// embeddedV4 returns the IPv4 address a NAT64 or 6to4 address stands for.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64.Contains(a) || nat64Loc.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// GuardedDialer returns a dialer that refuses, just before connecting, any
// address CheckAddr refuses (with allowPrivate, only the metadata and
// link-local addresses). The check runs on the resolved address of every connection
// attempt, so a host name that resolves to a private address, or that
// changes its answer between two lookups, is caught too.
func GuardedDialer(allowPrivate bool) *net.Dialer {
	return guardedDialer(func(ap netip.AddrPort) error { return checkAddr(ap.Addr(), allowPrivate) })
}

// guardedDialer returns a dialer that calls check with the address of each
// connection before it connects.
func guardedDialer(check func(netip.AddrPort) error) *net.Dialer {
	return &net.Dialer{
		Timeout:   30 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot parse %q: %w", ErrAddrRefused, address, err)
			}
			return check(ap)
		},
	}
}

// CheckURL checks what a guarded client checks of a URL before it asks
// the network: http or https, and a host.
func CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (only http and https)", ErrAddrRefused, u.Scheme)
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: URL %q has no host", ErrAddrRefused, u.Redacted())
	}
	return nil
}

// GuardedClient returns an HTTP client for requests whose target comes from
// configuration or event data: its connections go through GuardedDialer,
// it ignores proxy settings (a proxy would connect on its behalf,
// unchecked), and it follows at most maxRedirects redirects (0: none; the
// redirect response is returned), checking the scheme of each; the dialer
// checks each hop's address. timeout bounds each request (0: none).
func GuardedClient(allowPrivate bool, timeout time.Duration, maxRedirects int) *http.Client {
	return guardedClient(GuardedDialer(allowPrivate), timeout, maxRedirects)
}

func guardedClient(d *net.Dialer, timeout time.Duration, maxRedirects int) *http.Client {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          10,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if maxRedirects <= 0 {
				return http.ErrUseLastResponse
			}
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if err := CheckURL(req.URL); err != nil {
				return fmt.Errorf("redirect to %s: %w", req.URL.Redacted(), err)
			}
			return nil
		},
	}
}
