// SPDX-License-Identifier: MIT
// What the quic-go interop peers share: QUIC versions by name, the TLS key log, qlog files
// per connection and one line per connection with its observable state (version, resumption,
// 0-RTT), which interop/h3/run.sh reads.

package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	quic "github.com/lucas-clemente/quic-go"
	"github.com/lucas-clemente/quic-go/logging"
	"github.com/lucas-clemente/quic-go/qlog"
)

// parseVersions turns "v1,v2" into QUIC versions. quic-go 0.29 knows v1 (RFC 9000) and
// draft-ietf-quic-v2-01 (0x709a50c4, called Version2 there): not RFC 9369's 0x6b3343cf.
func parseVersions(s string) ([]quic.VersionNumber, error) {
	var out []quic.VersionNumber
	for _, v := range strings.Split(s, ",") {
		switch strings.TrimSpace(v) {
		case "v1", "1":
			out = append(out, quic.Version1)
		case "v2", "2", "v2draft":
			out = append(out, quic.Version2)
		case "draft29", "h3-29":
			out = append(out, quic.VersionDraft29)
		case "":
		default:
			return nil, fmt.Errorf("unknown QUIC version %q (v1, v2, draft29)", v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no QUIC version in %q", s)
	}
	return out, nil
}

// cipherSuites turns "chacha20", "aes128", "aes256" (comma-separated) into TLS 1.3 suites:
// qtls (quic-go's TLS) honours tls.Config.CipherSuites for TLS 1.3, unlike crypto/tls.
func cipherSuites(s string) ([]uint16, error) {
	var out []uint16
	for _, c := range strings.Split(s, ",") {
		switch strings.TrimSpace(c) {
		case "chacha20":
			out = append(out, tls.TLS_CHACHA20_POLY1305_SHA256)
		case "aes128":
			out = append(out, tls.TLS_AES_128_GCM_SHA256)
		case "aes256":
			out = append(out, tls.TLS_AES_256_GCM_SHA384)
		case "":
		default:
			return nil, fmt.Errorf("unknown cipher suite %q (chacha20, aes128, aes256)", c)
		}
	}
	return out, nil
}

// openKeyLog opens the NSS key log file (SSLKEYLOGFILE format), or returns nil for "".
func openKeyLog(path string) (io.Writer, error) {
	if path == "" {
		return nil, nil
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
}

// tracer is the connection tracer behind the "trace:" line: the version seen in long headers,
// Retry, key updates, 0-RTT packets and losses, plus qlog files per connection into qlogDir
// when it is not "".
func tracer(qlogDir, role string) logging.Tracer {
	t := logging.Tracer(summaryTracer{role: role})
	if qlogDir != "" {
		t = logging.NewMultiplexedTracer(t, qlogTracer(qlogDir, role))
	}
	return t
}

type summaryTracer struct {
	logging.NullTracer
	role string
}

func (s summaryTracer) TracerForConnection(_ context.Context, _ logging.Perspective,
	odcid logging.ConnectionID) logging.ConnectionTracer {
	return &connSummary{role: s.role, odcid: fmt.Sprintf("%x", odcid.Bytes())}
}

// connSummary counts what a connection did; Close prints it as one line.
type connSummary struct {
	logging.NullConnectionTracer
	mu                                         sync.Mutex
	role, odcid, remote                        string
	version                                    logging.VersionNumber
	retries, vnPackets, keyUpdatesLocal        int
	keyUpdatesRemote, sent0RTT, recv0RTT, lost int
	closeErr                                   string
}

func (c *connSummary) StartedConnection(_, remote net.Addr, _, _ logging.ConnectionID) {
	c.mu.Lock()
	c.remote = remote.String()
	c.mu.Unlock()
}

func (c *connSummary) NegotiatedVersion(chosen logging.VersionNumber, _, _ []logging.VersionNumber) {
	c.mu.Lock()
	c.version = chosen
	c.mu.Unlock()
}

func (c *connSummary) ReceivedVersionNegotiationPacket(*logging.Header, []logging.VersionNumber) {
	c.mu.Lock()
	c.vnPackets++
	c.mu.Unlock()
}

func (c *connSummary) ReceivedRetry(*logging.Header) {
	c.mu.Lock()
	c.retries++
	c.mu.Unlock()
}

func (c *connSummary) SentPacket(hdr *logging.ExtendedHeader, _ logging.ByteCount, _ *logging.AckFrame,
	_ []logging.Frame) {
	c.mu.Lock()
	if hdr.IsLongHeader {
		c.version = hdr.Version
	}
	if logging.PacketTypeFromHeader(&hdr.Header) == logging.PacketType0RTT {
		c.sent0RTT++
	}
	c.mu.Unlock()
}

func (c *connSummary) ReceivedPacket(hdr *logging.ExtendedHeader, _ logging.ByteCount, _ []logging.Frame) {
	c.mu.Lock()
	if hdr.IsLongHeader && hdr.Version != 0 {
		c.version = hdr.Version
	}
	if logging.PacketTypeFromHeader(&hdr.Header) == logging.PacketType0RTT {
		c.recv0RTT++
	}
	c.mu.Unlock()
}

func (c *connSummary) LostPacket(logging.EncryptionLevel, logging.PacketNumber, logging.PacketLossReason) {
	c.mu.Lock()
	c.lost++
	c.mu.Unlock()
}

func (c *connSummary) UpdatedKey(_ logging.KeyPhase, remote bool) {
	c.mu.Lock()
	if remote {
		c.keyUpdatesRemote++
	} else {
		c.keyUpdatesLocal++
	}
	c.mu.Unlock()
}

func (c *connSummary) ClosedConnection(err error) {
	c.mu.Lock()
	if err != nil {
		c.closeErr = strings.ReplaceAll(err.Error(), "\n", " ")
	}
	c.mu.Unlock()
}

// Close prints "trace: role=R odcid=X version=0x... retries=N vn=N key_updates_local=N
// key_updates_remote=N 0rtt_sent=N 0rtt_recv=N lost=N remote=A close=...".
func (c *connSummary) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	logf("trace: role=%s odcid=%s version=0x%08x retries=%d vn=%d key_updates_local=%d "+
		"key_updates_remote=%d 0rtt_sent=%d 0rtt_recv=%d lost=%d remote=%s close=%q",
		c.role, c.odcid, uint32(c.version), c.retries, c.vnPackets, c.keyUpdatesLocal,
		c.keyUpdatesRemote, c.sent0RTT, c.recv0RTT, c.lost, c.remote, c.closeErr)
}

// qlogTracer writes one qlog file per connection into dir.
func qlogTracer(dir, role string) logging.Tracer {
	return qlog.NewTracer(func(_ logging.Perspective, odcid []byte) io.WriteCloser {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%x.qlog", role, odcid)))
		if err != nil {
			fmt.Fprintf(os.Stderr, "qlog: %v\n", err)
			return nopCloser{io.Discard}
		}
		return f
	})
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

var logMu sync.Mutex

// logf prints one line to stderr (the harness greps these), whole lines only.
func logf(format string, args ...interface{}) {
	logMu.Lock()
	defer logMu.Unlock()
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

// connLine is the line the harness checks once a handshake completed: "conn: role=R
// resumed=B 0rtt=B alpn=A cipher=0x.... remote=ADDR".
func connLine(role string, c quic.Connection) {
	st := c.ConnectionState().TLS
	logf("conn: role=%s resumed=%v 0rtt=%v alpn=%s cipher=0x%04x remote=%s", role,
		st.DidResume, st.Used0RTT, st.NegotiatedProtocol, st.CipherSuite, c.RemoteAddr())
}
