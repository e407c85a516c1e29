package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// The ports of a bridge-mode allocation are forwarded by the client
// itself, one listener per port on the port's host address, each accepted
// connection copied both ways to the allocation's address and the port's
// `to`. Chosen over iptables DNAT because it works for every host address
// the same, 127.0.0.1 included (DNAT of locally sent traffic to
// 127.0.0.1 needs route_localnet and a masquerade of loopback sources),
// and leaves no rule on the host to clean after a crash; the cost is a
// copy through the client per connection, and no forwarding while the
// client is down (the tasks keep running; a restarted client listens
// again). Only TCP is forwarded.

// dialWait bounds a forwarded connection's dial into the namespace.
const dialWait = 5 * time.Second

// forwarder forwards one allocation's ports.
type forwarder struct {
	lns []net.Listener
	wg  sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{}
}

// startForwarder listens on every port and forwards to ip.
func startForwarder(ip string, ports []netPort, log func(string, ...any)) (*forwarder, error) {
	f := &forwarder{conns: map[net.Conn]struct{}{}}
	for _, p := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(p.HostIP, strconv.Itoa(p.HostPort)))
		if err != nil {
			f.close()
			return nil, fmt.Errorf("port %s: %w", p.Label, err)
		}
		f.lns = append(f.lns, ln)
		to := net.JoinHostPort(ip, strconv.Itoa(p.To))
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.accept(ln, to, log)
		}()
	}
	return f, nil
}

func (f *forwarder) accept(ln net.Listener, to string, log func(string, ...any)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log("network: port forward stopped", "listen", ln.Addr().String(), "error", err)
			}
			return
		}
		if !f.track(c) {
			c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			up, err := net.DialTimeout("tcp", to, dialWait)
			if err != nil {
				return
			}
			if !f.track(up) {
				up.Close()
				return
			}
			defer f.untrack(up)
			pipe(c, up)
		}()
	}
}

// pipe copies a to b and b to a until both directions end.
func pipe(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		io.Copy(b, a)
		closeWrite(b)
		close(done)
	}()
	io.Copy(a, b)
	closeWrite(a)
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite()
		return
	}
	c.Close()
}

func (f *forwarder) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *forwarder) untrack(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// close stops listening, ends every forwarded connection and waits for
// the forwarder's goroutines.
func (f *forwarder) close() {
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	for _, ln := range f.lns {
		ln.Close()
	}
	f.wg.Wait()
}
