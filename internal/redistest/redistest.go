// Package redistest starts real redis-server processes on 127.0.0.1 for
// the tests of the packages that use Redis, each on a free port and
// stopped by the test's cleanup.
package redistest

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Server is a redis-server on 127.0.0.1:Port without persistence. Its
// methods are for the test goroutine.
type Server struct {
	t    testing.TB
	args []string
	tls  bool
	dir  string // its working directory: a replica writes the RDB of a full sync there
	cmd  *exec.Cmd
	// Port is the port it listens on, the same across Stop and Start.
	Port int
}

// Start starts redis-server with extra args (such as "--requirepass",
// "secret") and waits until it accepts connections. It fails under CI=true
// when redis-server is not installed (.ci/run installs it) and skips
// elsewhere.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	return start(t, false, args)
}

func start(t testing.TB, tls bool, args []string) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed (CI installs it: .ci/run)")
		}
		t.Skip("redis-server is not installed")
	}
	s := &Server{t: t, args: args, tls: tls, dir: t.TempDir(), Port: FreePort(t)}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// StartTLS starts redis-server serving TLS only, with the server
// certificate of files, and client certificates required (verified with
// files.CA).
func StartTLS(t testing.TB, files TLSFiles, args ...string) *Server {
	t.Helper()
	return start(t, true, append([]string{"--tls-cert-file", files.ServerCert, "--tls-key-file", files.ServerKey,
		"--tls-ca-cert-file", files.CA, "--tls-auth-clients", "yes"}, args...))
}

// FreePort returns a port free on 127.0.0.1 now.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Addr is host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is redis://host:port.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// Start starts the server (again, after Stop) and waits, at most 10s,
// until it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	port := []string{"--port", strconv.Itoa(s.Port)}
	if s.tls {
		port = []string{"--port", "0", "--tls-port", strconv.Itoa(s.Port)}
	}
	args := append(append(port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", s.dir), s.args...)
	s.cmd = exec.Command("redis-server", args...)
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server did not listen within 10s: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // polling a port, not synchronizing goroutines
	}
}

// Stop kills the server (SIGKILL) and waits for it to exit.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Signal sends sig to the running server (SIGSTOP stalls it, SIGCONT
// resumes it).
func (s *Server) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }
