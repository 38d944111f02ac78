// SPDX-License-Identifier: MIT
// An HTTP/3 file server on quic-go 0.29 (Debian's golang-github-lucas-clemente-quic-go-dev),
// a peer of interop/h3/run.sh: serves a directory over HTTP/3 (RFC 9114) on UDP, with a Retry
// (RFC 9000 section 8.1.2) for every new address on request, the QUIC versions asked for, 0-RTT
// accepted, a TLS key log and qlog. One "conn:" line per completed handshake and one "trace:"
// line per closed connection go to stderr.
//
// Usage: quicgo-server -listen 127.0.0.1:4433 -root DIR -cert CERT -key KEY [-retry]
//        [-versions v1,v2] [-ciphers chacha20] [-keylog FILE] [-qlog DIR]

package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	quic "github.com/lucas-clemente/quic-go"
	"github.com/lucas-clemente/quic-go/http3"
)

// loggingListener hands connections to the HTTP/3 server and prints their state once their
// handshake completes.
type loggingListener struct {
	quic.EarlyListener
}

func (l loggingListener) Accept(ctx context.Context) (quic.EarlyConnection, error) {
	c, err := l.EarlyListener.Accept(ctx)
	if err == nil {
		go func() {
			select {
			case <-c.HandshakeComplete().Done():
				connLine("server", c)
			case <-c.Context().Done():
			}
		}()
	}
	return c, err
}

func main() {
	listen := flag.String("listen", "127.0.0.1:4433", "UDP address to serve on")
	root := flag.String("root", ".", "directory to serve")
	certFile := flag.String("cert", "", "PEM certificate chain")
	keyFile := flag.String("key", "", "PEM private key")
	retry := flag.Bool("retry", false, "send a Retry to every new client address")
	versions := flag.String("versions", "v1,v2", "QUIC versions offered, by preference (v1, v2, draft29)")
	keylog := flag.String("keylog", "", "append TLS secrets to this file (SSLKEYLOGFILE format)")
	qlogDir := flag.String("qlog", "", "write a qlog file per connection into this directory")
	ciphers := flag.String("ciphers", "", "TLS 1.3 cipher suites allowed (chacha20, aes128, aes256; default all)")
	flag.Parse()

	vs, err := parseVersions(*versions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server:", err)
		os.Exit(2)
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server: certificate:", err)
		os.Exit(2)
	}
	kl, err := openKeyLog(*keylog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server: keylog:", err)
		os.Exit(2)
	}
	suites, err := cipherSuites(*ciphers)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server:", err)
		os.Exit(2)
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h3"},
		KeyLogWriter: kl,
		CipherSuites: suites,
	}
	qconf := &quic.Config{
		Versions:       vs,
		MaxIdleTimeout: 30 * time.Second,
		// The interop runner's multiplexing case opens 2000 streams; let them in.
		MaxIncomingStreams: 1000,
		Tracer:             tracer(*qlogDir, "server"),
	}
	if *retry {
		qconf.RequireAddressValidation = func(net.Addr) bool { return true }
	}
	udpAddr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server:", err)
		os.Exit(2)
	}
	conn, err := net.ListenUDP("udp", udpAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server: listen:", err)
		os.Exit(1)
	}
	ln, err := quic.ListenEarly(conn, http3.ConfigureTLSConfig(tlsConf), qconf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server: listen:", err)
		os.Exit(1)
	}
	files := http.FileServer(http.Dir(*root))
	srv := &http3.Server{
		QuicConfig: qconf,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			logf("request: %s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
			files.ServeHTTP(w, r)
		}),
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sig
		srv.Close()
		ln.Close()
		os.Exit(0)
	}()
	logf("listening on %s versions=%s retry=%v", conn.LocalAddr(), *versions, *retry)
	if err := srv.ServeListener(loggingListener{ln}); err != nil {
		fmt.Fprintln(os.Stderr, "quicgo-server:", err)
		os.Exit(1)
	}
}
