package transport

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// fakeService listens on 127.0.0.1 and treats each connection with serve.
func fakeService(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// Probe tells what answers at an address before gRPC would: another
// service, one that says nothing, or one that closes at once.
func TestProbeNamesWhatAnswers(t *testing.T) {
	for _, c := range []struct {
		name  string
		serve func(net.Conn)
		is    error
		says  string
	}{
		{"an HTTP/1 server", func(c net.Conn) {
			buf := make([]byte, 100)
			_, _ = c.Read(buf)
			_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			c.Close()
		}, ErrNotSluice, `answered "HTTP/1.1 400 Bad Request"`},
		{"a banner", func(c net.Conn) {
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n")
			time.Sleep(5 * time.Second)
			c.Close()
		}, ErrNotSluice, `answered "SSH-2.0-OpenSSH_9.2"`},
		{"binary", func(c net.Conn) { _, _ = c.Write([]byte{0, 1, 2, 0xff, 0xfe}); c.Close() }, ErrNotSluice, "answered bytes 000102fffe"},
		{"silence", func(c net.Conn) { time.Sleep(5 * time.Second); c.Close() }, ErrNoAnswer, "within 2s"},
		{"a closed connection", func(c net.Conn) { c.Close() }, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr := fakeService(t, c.serve)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := sender.Probe(ctx, addr)
			if err == nil {
				t.Fatal("probe passed")
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("got %v, want %v", err, c.is)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%q lacks %q", err, c.says)
			}
			if c.is == nil && (errors.Is(err, ErrNotSluice) || errors.Is(err, ErrNoAnswer)) {
				t.Fatalf("a closed connection taken for %v", err)
			}
		})
	}
}
