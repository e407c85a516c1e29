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
// again). Each port is forwarded for TCP and for UDP: a UDP sender gets a
// socket of its own towards the task (so the task's replies find it),
// closed after udpIdle without traffic; at most maxUDPSessions senders
// per port at once.

// dialWait bounds a forwarded connection's dial into the namespace.
const dialWait = 5 * time.Second

// udpIdle ends a UDP sender's session after that long without a packet
// either way; maxUDPSessions bounds the sessions of one port.
const (
	udpIdle        = time.Minute
	maxUDPSessions = 1024
)

// forwarder forwards one allocation's ports.
type forwarder struct {
	lns []net.Listener
	pcs []net.PacketConn
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
		pc, err := net.ListenPacket("udp", net.JoinHostPort(p.HostIP, strconv.Itoa(p.HostPort)))
		if err != nil {
			f.close()
			return nil, fmt.Errorf("port %s (udp): %w", p.Label, err)
		}
		f.pcs = append(f.pcs, pc)
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.relayUDP(pc, to)
		}()
	}
	return f, nil
}

// relayUDP forwards the datagrams pc receives to `to`, each sender
// through a socket of its own, and the replies back to the sender.
func (f *forwarder) relayUDP(pc net.PacketConn, to string) {
	raddr, err := net.ResolveUDPAddr("udp", to)
	if err != nil {
		return
	}
	var mu sync.Mutex
	sessions := map[string]*net.UDPConn{}
	defer func() {
		mu.Lock()
		for _, c := range sessions {
			c.Close()
		}
		mu.Unlock()
	}()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		key := from.String()
		mu.Lock()
		up := sessions[key]
		if up == nil && len(sessions) < maxUDPSessions {
			if up, err = net.DialUDP("udp", nil, raddr); err == nil && f.track(up) {
				sessions[key] = up
				f.wg.Add(1)
				go func() {
					defer f.wg.Done()
					defer func() {
						mu.Lock()
						delete(sessions, key)
						mu.Unlock()
						f.untrack(up)
					}()
					rb := make([]byte, 64<<10)
					for {
						up.SetReadDeadline(time.Now().Add(udpIdle))
						m, err := up.Read(rb)
						if err != nil {
							return
						}
						pc.WriteTo(rb[:m], from)
					}
				}()
			} else {
				if up != nil {
					up.Close()
				}
				up = nil
			}
		}
		mu.Unlock()
		if up != nil {
			up.SetReadDeadline(time.Now().Add(udpIdle))
			up.Write(buf[:n])
		}
	}
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
	for _, pc := range f.pcs {
		pc.Close()
	}
	f.wg.Wait()
}
