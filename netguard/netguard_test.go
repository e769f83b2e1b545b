package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr  string
		class string // "" means allowed
	}{
		{"93.184.216.34", ""},
		{"8.8.8.8", ""},
		{"2606:4700:4700::1111", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.1", ""},
		{"192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"169.254.169.254", "metadata"},
		{"::ffff:169.254.169.254", "metadata"},
		{"fd00:ec2::254", "metadata"},
		{"168.63.129.16", "metadata"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"100.127.255.255", "shared (CGNAT)"},
		{"100.128.0.1", ""},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"198.18.0.1", "benchmarking"},
		{"64:ff9b::7f00:1", "loopback"},   // NAT64 of 127.0.0.1
		{"64:ff9b::a00:1", "private"},     // NAT64 of 10.0.0.1
		{"64:ff9b::808:808", ""},          // NAT64 of 8.8.8.8
		{"2002:7f00:1::1", "loopback"},    // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", "metadata"}, // 6to4 of 169.254.169.254
		{"::127.0.0.1", "IPv4-compatible"},
		{"2001::1", "Teredo"},
	}
	for _, tt := range tests {
		err := CheckAddr(net.ParseIP(tt.addr))
		if tt.class == "" {
			if err != nil {
				t.Errorf("CheckAddr(%s) = %v; want allowed", tt.addr, err)
			}
			continue
		}
		var ae *AddrError
		if !errors.As(err, &ae) || ae.Class != tt.class || !errors.Is(err, ErrAddrRefused) {
			t.Errorf("CheckAddr(%s) = %v; want refused as %s", tt.addr, err, tt.class)
		}
	}
	if err := CheckAddr(nil); err == nil {
		t.Error("CheckAddr(nil) allowed")
	}
}

func TestCheckAddrAllowPrivate(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::1", "10.0.0.1", "192.168.0.1", "fc00::1", "100.64.0.1"} {
		if err := checkAddr(netip.MustParseAddr(a), true); err != nil {
			t.Errorf("allow_private: %s refused: %v", a, err)
		}
	}
	for _, a := range []string{"169.254.169.254", "fd00:ec2::254", "::ffff:169.254.169.254", "64:ff9b::a9fe:a9fe"} {
		if err := checkAddr(netip.MustParseAddr(a), true); err == nil {
			t.Errorf("allow_private: metadata address %s allowed", a)
		}
	}
	// Link-local stays refused: 169.254.170.2 is the ECS task credentials
	// endpoint, and fe80::/10 reaches neighbours' services.
	for _, a := range []string{"169.254.170.2", "169.254.0.1", "169.254.255.254", "::ffff:169.254.170.2",
		"64:ff9b::a9fe:aa02", "2002:a9fe:aa02::1", "fe80::1", "fe80::1%eth0", "febf:ffff::1"} {
		var ae *AddrError
		if err := checkAddr(netip.MustParseAddr(a), true); !errors.As(err, &ae) || ae.Class != "link-local" {
			t.Errorf("allow_private: link-local address %s: got %v; want refused as link-local", a, err)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, raw := range []string{"file:///etc/passwd", "ftp://example.com/", "gopher://x", "http:///path", "javascript:alert(1)"} {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if err := CheckURL(u); err == nil {
			t.Errorf("CheckURL(%s) allowed", raw)
		}
	}
	for _, raw := range []string{"http://example.com/", "https://example.com:8443/x?y=1"} {
		u, _ := url.Parse(raw)
		if err := CheckURL(u); err != nil {
			t.Errorf("CheckURL(%s) = %v", raw, err)
		}
	}
}

// TestGuardedClientRefuses sends requests to addresses that must be
// refused. The guard runs before connect(2), so nothing is sent to the
// non-loopback ones: the error must say refused, and come at once.
func TestGuardedClientRefuses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the guard let a request through to %s", r.Host)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	client := GuardedClient(false, 5*time.Second, 5)
	for _, target := range []string{
		fmt.Sprintf("http://127.0.0.1:%d/", port),
		fmt.Sprintf("http://localhost:%d/", port),
		fmt.Sprintf("http://[::1]:%d/", port),
		fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port),
		fmt.Sprintf("http://0.0.0.0:%d/", port),
		"http://169.254.169.254/latest/meta-data/",
		"http://10.0.0.1:9/",
		"http://192.168.0.1/",
		"http://[fd00:ec2::254]/",
	} {
		t.Run(target, func(t *testing.T) {
			start := time.Now()
			resp, err := client.Get(target)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("request to %s went through", target)
			}
			if !errors.Is(err, ErrAddrRefused) || !strings.Contains(err.Error(), "refused to connect") {
				t.Errorf("err = %v; want a refusal by the guard", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v: the guard should refuse before connecting", d)
			}
		})
	}
}

// allowOnly returns a dialer that lets through the one address allowed
// (a test server standing for a public one) and guards the others as
// GuardedDialer(false) does.
func allowOnly(allowed string) *net.Dialer {
	return guardedDialer(func(ap netip.AddrPort) error {
		if ap.String() == allowed {
			return nil
		}
		return checkAddr(ap.Addr(), false)
	})
}

func TestGuardedClientRedirects(t *testing.T) {
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a redirect reached the internal server: %s", r.URL)
	}))
	defer internal.Close()
	var public *httptest.Server
	public = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-loopback":
			http.Redirect(w, r, internal.URL+"/secret", http.StatusFound)
		case "/to-localhost":
			http.Redirect(w, r, strings.Replace(internal.URL, "127.0.0.1", "localhost", 1), http.StatusFound)
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusMovedPermanently)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/hop":
			http.Redirect(w, r, "/final", http.StatusFound)
		case "/final":
			fmt.Fprint(w, "arrived")
		}
	}))
	defer public.Close()
	client := guardedClient(allowOnly(public.Listener.Addr().String()), 5*time.Second, 5)

	for _, path := range []string{"/to-loopback", "/to-localhost", "/to-metadata"} {
		resp, err := client.Get(public.URL + path)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: followed the redirect", path)
		} else if !errors.Is(err, ErrAddrRefused) {
			t.Errorf("%s: err = %v; want a refusal", path, err)
		}
	}
	if resp, err := client.Get(public.URL + "/to-file"); err == nil {
		resp.Body.Close()
		t.Error("followed a redirect to file://")
	} else if !strings.Contains(err.Error(), "scheme") {
		t.Errorf("redirect to file: err = %v", err)
	}
	if resp, err := client.Get(public.URL + "/loop"); err == nil {
		resp.Body.Close()
		t.Error("followed redirects forever")
	} else if !strings.Contains(err.Error(), "stopped after 5 redirects") {
		t.Errorf("loop: err = %v", err)
	}
	resp, err := client.Get(public.URL + "/hop")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/final" {
		t.Errorf("ended at %s", resp.Request.URL)
	}
	// No redirects: the 3xx is the answer.
	none := guardedClient(allowOnly(public.Listener.Addr().String()), 5*time.Second, 0)
	resp, err = none.Get(public.URL + "/to-loopback")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("max redirects 0: status %d", resp.StatusCode)
	}
}

// TestGuardedClientRebinding serves a host name whose first answer is
// public and later answers loopback: the guard checks each connection's
// resolved address, so the second connection is refused.
func TestGuardedClientRebinding(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	calls := 0
	d := guardedDialer(func(ap netip.AddrPort) error {
		calls++
		if calls == 1 && ap.String() == addr {
			return nil // the first lookup "was public"
		}
		return checkAddr(ap.Addr(), false)
	})
	client := guardedClient(d, 5*time.Second, 5)
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := client.Get(srv.URL); !errors.Is(err, ErrAddrRefused) {
		t.Errorf("second connection: err = %v; want refused", err)
	}
}
