package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrNotSluice is returned by Probe for an address where something other
// than a Sluice broker answers.
var ErrNotSluice = errors.New("not a Sluice broker")

// ErrNoAnswer is returned by Probe for an address that accepts connections
// but says nothing: a paused or overloaded broker, or another service.
var ErrNoAnswer = errors.New("no answer")

// http2Greeting is a client's HTTP/2 connection preface and an empty
// SETTINGS frame: a gRPC server answers it with a SETTINGS frame of its own.
var http2Greeting = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)

// greetPlaintext sends the HTTP/2 greeting to addr and reads the first
// bytes of the answer, to tell a Sluice broker from another service before
// gRPC, which reports both as a closed connection.
func greetPlaintext(ctx context.Context, addr string) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(5 * time.Second)
	}
	_ = conn.SetDeadline(deadline)
	wait := time.Until(deadline)
	if _, err := conn.Write(http2Greeting); err != nil {
		return nil // the read below would say no more; gRPC reports it
	}
	head := make([]byte, 32)
	n, err := io.ReadAtLeast(conn, head, 4)
	var ne net.Error
	switch {
	case n >= 4 && head[3] == 4:
		return nil // a SETTINGS frame: an HTTP/2 server
	case n > 0:
		return fmt.Errorf("%w: %s answered %s", ErrNotSluice, addr, quoteStart(head[:n]))
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("%w from %s within %v: a paused or overloaded broker, or not a Sluice broker",
			ErrNoAnswer, addr, wait.Round(100*time.Millisecond))
	}
	// Closed without a word: a TLS listener does that to plaintext; gRPC's
	// own dial says so.
	return nil
}

// quoteStart shows the first bytes a peer sent: as text when they are
// printable, else in hex.
func quoteStart(b []byte) string {
	if !utf8.Valid(b) {
		return fmt.Sprintf("bytes %x", b)
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && r != '\r' && r != '\n' {
			return fmt.Sprintf("bytes %x", b)
		}
	}
	text := string(b)
	if i := strings.IndexAny(text, "\r\n"); i > 0 {
		return strconv.Quote(text[:i])
	}
	return strconv.Quote(text) + "…"
}
