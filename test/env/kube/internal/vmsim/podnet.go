package vmsim

import (
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// podNetwork puts each process's port on the Pod IP inside the sandbox's pod network namespace
// (test/sandbox/pod-network.ts creates it; Config.PodNetns names it). The listening socket is created inside that
// namespace and each connection it accepts is forwarded to the process on 127.0.0.1 of the simulator's own
// namespace: a socket keeps the namespace it was created in, so the forwarder bridges the two without the
// process, or anything else, listening on an address outside loopback and the namespace.
type podNetwork struct {
	netns string // /run/netns/<name>
	ip    string

	mu        sync.Mutex
	listening map[int]net.Listener
}

// forward makes ip:port in the namespace reach 127.0.0.1:port; idempotent per port (a restarted process keeps
// its port, so its forwarder stays; while the process is down a connection is refused, as by a Pod being replaced).
func (n *podNetwork) forward(port int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.listening[port]; ok {
		return nil
	}
	address := net.JoinHostPort(n.ip, strconv.Itoa(port))
	l, err := listenInNetns(n.netns, address)
	if err != nil {
		return fmt.Errorf("listen on the Pod IP %s in %s: %w", address, n.netns, err)
	}
	n.listening[port] = l
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				log.Printf("vmoperator-sim: pod network forwarder %s stopped: %v", address, err)
				return
			}
			go pipe(conn, target)
		}
	}()
	log.Printf("vmoperator-sim: %s (pod network namespace %s) forwards to %s", address, n.netns, target)
	return nil
}

func pipe(conn net.Conn, target string) {
	defer conn.Close()
	upstream, err := net.Dial("tcp", target)
	if err != nil {
		return // the process is down: the client sees the connection close
	}
	defer upstream.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(upstream, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, upstream); done <- struct{}{} }()
	<-done
}

// listenInNetns creates a TCP listener inside the network namespace at nsPath. The switch happens on a thread of
// its own: if switching back fails, the goroutine ends with the thread still locked, and Go discards the thread
// rather than run other goroutines in the wrong namespace.
func listenInNetns(nsPath, address string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	out := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			out <- result{err: err}
			return
		}
		defer own.Close()
		target, err := os.Open(nsPath)
		if err != nil {
			runtime.UnlockOSThread()
			out <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			out <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		l, listenErr := net.Listen("tcp", address)
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			out <- result{l: l, err: listenErr} // the thread stays locked and dies with this goroutine
			return
		}
		runtime.UnlockOSThread()
		out <- result{l: l, err: listenErr}
	}()
	r := <-out
	return r.l, r.err
}
