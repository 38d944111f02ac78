// SPDX-License-Identifier: MIT
// An HTTP/3 download client on quic-go 0.29 (Debian's golang-github-lucas-clemente-quic-go-dev),
// a peer of interop/h3/run.sh: fetches URLs over HTTP/3 (RFC 9114) into files, in parallel on
// one connection, one connection per URL, or the first URL on a first connection and the rest on
// a second that resumes its TLS session (RFC 8446 section 2.2), with 0-RTT GETs on request
// (RFC 9001 section 4.6). A key update every 100 packets on request (RFC 9001 section 6). One
// "conn:" line per completed handshake and one "trace:" line per closed connection go to stderr.
//
// Usage: quicgo-client -out DIR [-insecure] [-versions v1,v2] [-resume] [-0rtt] [-keyupdate]
//        [-multiconnect] [-ciphers chacha20] [-keylog FILE] [-qlog DIR] [-timeout 30s] URL...
// Exit status: 0 every URL saved with status 200, 1 a transfer failed, 2 usage.

package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	quic "github.com/lucas-clemente/quic-go"
	"github.com/lucas-clemente/quic-go/http3"
	"github.com/lucas-clemente/quic-go/internal/handshake"
)

type client struct {
	out     string
	tlsConf *tls.Config
	qconf   *quic.Config
	timeout time.Duration
}

// newTransport is a RoundTripper whose dials print the connection's state after its handshake.
// Unless early is set, a dial returns only once the handshake completed: quic-go would
// otherwise open HTTP/3's control stream in 0-RTT whenever a ticket allows it, and a plain
// resumption must send no 0-RTT packet.
func (c *client) newTransport(early bool) *http3.RoundTripper {
	return &http3.RoundTripper{
		TLSClientConfig: c.tlsConf,
		QuicConfig:      c.qconf,
		Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config,
			cfg *quic.Config) (quic.EarlyConnection, error) {
			conn, err := quic.DialAddrEarlyContext(ctx, addr, tlsCfg, cfg)
			if err != nil {
				return nil, err
			}
			if !early {
				select {
				case <-conn.HandshakeComplete().Done():
				case <-conn.Context().Done():
					return nil, conn.Context().Err()
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			go func() {
				select {
				case <-conn.HandshakeComplete().Done():
					connLine("client", conn)
				case <-conn.Context().Done():
				}
			}()
			return conn, nil
		},
	}
}

// fetch downloads one URL into out/<last path segment>.
func (c *client) fetch(rt *http3.RoundTripper, url, method string) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	name := path.Base(req.URL.Path)
	if name == "/" || name == "." {
		name = "index.html"
	}
	f, err := os.Create(filepath.Join(c.out, name))
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: body after %d bytes: %w", url, n, err)
	}
	logf("response: %s %d %d bytes %s", url, resp.StatusCode, n, resp.Proto)
	return nil
}

// fetchAll downloads urls in parallel (at most 100 at a time) over rt's connection.
func (c *client) fetchAll(rt *http3.RoundTripper, urls []string, method string) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(urls))
	sem := make(chan struct{}, 100)
	for _, u := range urls {
		wg.Add(1)
		sem <- struct{}{}
		go func(u string) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := c.fetch(rt, u, method); err != nil {
				errs <- err
			}
		}(u)
	}
	wg.Wait()
	close(errs)
	var first error
	n := 0
	for err := range errs {
		if first == nil {
			first = err
		}
		n++
	}
	if n > 1 {
		return fmt.Errorf("%w (and %d more failures)", first, n-1)
	}
	return first
}

func main() {
	out := flag.String("out", ".", "directory the downloads are written to")
	insecure := flag.Bool("insecure", false, "do not verify the server's certificate")
	caFile := flag.String("ca", "", "PEM CA certificates to verify the server with")
	versions := flag.String("versions", "v1", "QUIC versions, the first used for the first Initial (v1, v2, draft29)")
	resume := flag.Bool("resume", false, "first URL on one connection, the rest on a second that resumes")
	zeroRTT := flag.Bool("0rtt", false, "with -resume: the second connection's GETs go in 0-RTT")
	keyUpdate := flag.Bool("keyupdate", false, "initiate a key update every 100 packets")
	multi := flag.Bool("multiconnect", false, "one connection per URL, one after the other")
	keylog := flag.String("keylog", "", "append TLS secrets to this file (SSLKEYLOGFILE format)")
	qlogDir := flag.String("qlog", "", "write a qlog file per connection into this directory")
	timeout := flag.Duration("timeout", 30*time.Second, "limit for each request")
	ciphers := flag.String("ciphers", "", "TLS 1.3 cipher suites offered (chacha20, aes128, aes256; default all)")
	flag.Parse()
	urls := flag.Args()
	if len(urls) == 0 || (*resume && len(urls) < 2) {
		fmt.Fprintln(os.Stderr, "quicgo-client: give URLs (at least two with -resume)")
		os.Exit(2)
	}
	vs, err := parseVersions(*versions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-client:", err)
		os.Exit(2)
	}
	kl, err := openKeyLog(*keylog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-client: keylog:", err)
		os.Exit(2)
	}
	if *keyUpdate {
		// quic-go has no API to ask for a key update; its own interop client shortens the
		// interval this way (a package variable of internal/handshake).
		handshake.KeyUpdateInterval = 100
	}
	suites, err := cipherSuites(*ciphers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-client:", err)
		os.Exit(2)
	}
	c := &client{out: *out, timeout: *timeout}
	c.tlsConf = &tls.Config{
		CipherSuites:       suites,
		InsecureSkipVerify: *insecure,
		KeyLogWriter:       kl,
		ClientSessionCache: tls.NewLRUClientSessionCache(8),
	}
	if *caFile != "" {
		pem, err := os.ReadFile(*caFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "quicgo-client:", err)
			os.Exit(2)
		}
		c.tlsConf.RootCAs = x509.NewCertPool()
		c.tlsConf.RootCAs.AppendCertsFromPEM(pem)
	}
	c.qconf = &quic.Config{
		Versions:             vs,
		HandshakeIdleTimeout: 30 * time.Second, // 30% loss backs PTOs off for seconds
		MaxIdleTimeout:       30 * time.Second,
		Tracer:               tracer(*qlogDir, "client"),
	}

	switch {
	case *resume:
		rt := c.newTransport(false)
		err = c.fetchAll(rt, urls[:1], http.MethodGet)
		// Closing the first connection before the second is opened: the ticket came in
		// the first's handshake, and the server sees two distinct connections.
		rt.Close()
		if err == nil {
			method := http.MethodGet
			if *zeroRTT {
				method = http3.MethodGet0RTT
			}
			rt2 := c.newTransport(*zeroRTT)
			err = c.fetchAll(rt2, urls[1:], method)
			rt2.Close()
		}
	case *multi:
		for _, u := range urls {
			rt := c.newTransport(false)
			err = c.fetchAll(rt, []string{u}, http.MethodGet)
			rt.Close()
			if err != nil {
				break
			}
		}
	default:
		rt := c.newTransport(false)
		err = c.fetchAll(rt, urls, http.MethodGet)
		rt.Close()
	}
	// The tracers print their "trace:" lines when the connections are torn down.
	time.Sleep(50 * time.Millisecond)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-client:", err)
		os.Exit(1)
	}
}
