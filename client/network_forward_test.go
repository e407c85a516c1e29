package client

import (
	"bufio"
	"net"
	"strconv"
	"testing"
	"time"
)

// echoBackend is a task's server: TCP and UDP echo on one port of
// 127.0.0.1.
func echoBackend(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		ln.Close()
		t.Skipf("udp port %d taken: %v", port, err)
	}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				c.Write([]byte("tcp:" + line))
			}()
		}
	}()
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(append([]byte("udp:"), buf[:n]...), from)
		}
	}()
	return port
}

func freeLocalPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestForwarderTCPAndUDP: a port is forwarded for TCP and UDP to the
// task's address and `to`; once closed, the host port no longer answers.
func TestForwarderTCPAndUDP(t *testing.T) {
	to := echoBackend(t)
	host := freeLocalPort(t)
	f, err := startForwarder("127.0.0.1", []netPort{{Label: "p", HostIP: "127.0.0.1", HostPort: host, To: to}}, nopLog)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(host))
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte("hello\n"))
	got, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || got != "tcp:hello\n" {
		t.Fatalf("tcp through the forwarder: %q, %v", got, err)
	}
	u, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	u.SetDeadline(time.Now().Add(10 * time.Second))
	u.Write([]byte("ping"))
	buf := make([]byte, 100)
	n, err := u.Read(buf)
	if err != nil || string(buf[:n]) != "udp:ping" {
		t.Fatalf("udp through the forwarder: %q, %v", buf[:n], err)
	}
	f.close()
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the host port still accepts after close")
	}
	// The port is free again: a new forwarder (a restarted client) takes it.
	f2, err := startForwarder("127.0.0.1", []netPort{{Label: "p", HostIP: "127.0.0.1", HostPort: host, To: to}}, nopLog)
	if err != nil {
		t.Fatalf("forward the port again: %v", err)
	}
	f2.close()
}
