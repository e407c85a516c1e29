package http

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// pipeListener hands out one end of net.Pipe per Dial, with the remote
// address the test chose.
type pipeListener struct {
	conns chan net.Conn
}

type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func (l *pipeListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}
func (l *pipeListener) Close() error   { return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{} }

// dial makes a connection from ip and returns the server's end as the
// limiter hands it out, or nil when the limiter closed it. Behind it
// comes a sentinel connection from another address: Accept returns the
// sentinel first exactly when it refused (and closed) the connection.
func (l *pipeListener) dial(t *testing.T, lim net.Listener, ip string) net.Conn {
	t.Helper()
	server, client := net.Pipe()
	t.Cleanup(func() { client.Close() })
	sentinel := &net.TCPAddr{IP: net.ParseIP("192.0.2.250"), Port: 1}
	s2, c2 := net.Pipe()
	t.Cleanup(func() { c2.Close() })
	l.conns <- addrConn{Conn: server, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 1234}}
	l.conns <- addrConn{Conn: s2, remote: sentinel}
	c, err := lim.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if c.RemoteAddr() == sentinel {
		c.Close()
		if _, err := client.Read(make([]byte, 1)); err == nil {
			t.Fatal("a refused connection was left open")
		}
		return nil
	}
	s, err := lim.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return c
}

func TestLimitConnsPerClient(t *testing.T) {
	pl := &pipeListener{conns: make(chan net.Conn, 4)}
	lim := LimitConnsPerClient(pl, 2)
	a1 := pl.dial(t, lim, "192.0.2.1")
	a2 := pl.dial(t, lim, "192.0.2.1")
	if a1 == nil || a2 == nil {
		t.Fatal("connections within the cap refused")
	}
	if c := pl.dial(t, lim, "192.0.2.1"); c != nil {
		t.Fatal("a third connection from one address accepted with a cap of 2")
	}
	if c := pl.dial(t, lim, "192.0.2.2"); c == nil {
		t.Fatal("another address refused")
	}
	for range 3 {
		if c := pl.dial(t, lim, "127.0.0.1"); c == nil {
			t.Fatal("a loopback connection counted against the cap")
		}
	}
	a1.Close()
	a1.Close() // a second Close frees nothing more
	if c := pl.dial(t, lim, "192.0.2.1"); c == nil {
		t.Fatal("a closed connection's slot was not freed")
	}
	if c := pl.dial(t, lim, "192.0.2.1"); c != nil {
		t.Fatal("a double Close freed two slots")
	}
}

// A client that sends its body slowly is cut off at the read timeout; a
// request whose body is in, and that then waits (a blocking query), is
// not.
func TestWithTimeoutsSlowBody(t *testing.T) {
	const read = 100 * time.Millisecond
	srv := httptest.NewServer(WithTimeouts(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "read body: "+err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(3 * read): // the handler's own work outlasting the read timeout
			io.WriteString(w, "done")
		case <-r.Context().Done():
			io.WriteString(w, "cancelled")
		}
	}), Timeouts{Read: read, Write: time.Minute}))
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a bound on the test, far above the timeout
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the slow body's connection got no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "timeout") {
		t.Errorf("slow body: %d %q, want a 400 naming the timeout", resp.StatusCode, body)
	}

	resp2, err := http.Post(srv.URL, "text/plain", strings.NewReader("quick"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if string(b) != "done" {
		t.Errorf("a request that waits after its body was read: %q, want done (its context was cancelled by the read deadline)", b)
	}
}
