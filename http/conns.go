package http

import (
	"net"
	"sync"
)

// LimitConnsPerClient wraps l so that at most max connections from one
// client IP address are open at once; a connection over the cap is closed
// as soon as it is accepted, before anything is read from it. Loopback
// clients are not counted: they are the agent's own client, the CLI and
// tests on the same host, which could stop the agent anyway. max <= 0
// returns l unchanged.
//
// It keeps one slow or hostile address from holding every file descriptor
// and goroutine of a server, together with the server's read, write and
// idle timeouts (WithTimeouts, and the agent's http.Server).
func LimitConnsPerClient(l net.Listener, max int) net.Listener {
	if max <= 0 {
		return l
	}
	return &connLimiter{Listener: l, max: max, open: map[string]int{}}
}

// connLimiter is LimitConnsPerClient's listener.
type connLimiter struct {
	net.Listener
	max int

	mu   sync.Mutex
	open map[string]int // by client IP
}

// Accept returns the next connection within the cap, closing those over
// it.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		if ip == "" {
			return c, nil
		}
		if !l.acquire(ip) {
			c.Close()
			continue
		}
		return &limitedConn{Conn: c, release: func() { l.release(ip) }}, nil
	}
}

func (l *connLimiter) acquire(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip] >= l.max {
		return false
	}
	l.open[ip]++
	return true
}

func (l *connLimiter) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[ip]--; l.open[ip] <= 0 {
		delete(l.open, ip)
	}
}

// clientIP is the IP of a TCP peer, or "" when it is not counted
// (loopback, or not TCP).
func clientIP(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return ""
	}
	return tcp.IP.String()
}

// limitedConn gives its slot back when closed, once.
type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// Close closes the connection and frees its slot.
func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
