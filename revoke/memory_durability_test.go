//go:build linux

package revoke

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A write the file system takes only in part (ENOSPC, EFBIG, EIO) is not
// acknowledged; the next write, acknowledged, must still be read back at
// start: the bytes of the failed record may not make the log unreadable.
// RLIMIT_FSIZE makes the kernel take a short write as a full disk would
// (Go ignores SIGXFSZ, so the write returns EFBIG).
func TestMemoryShortWriteKeepsLaterAdds(t *testing.T) {
	dir := t.TempDir()
	now := t0
	open := func() (*Memory, error) {
		return OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: func() time.Time { return now }})
	}
	m, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "first", Source: SourceAdmin}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, MemoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	full := old
	full.Cur = uint64(fi.Size()) + 20 // the disk fills 20 bytes into the next record
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	_, failed := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "refused", Source: SourceAdmin})
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(failed, ErrUnavailable) {
		t.Fatalf("Add() on a full disk = %v, want ErrUnavailable (nothing acknowledged)", failed)
	}
	// Space again: this one is acknowledged (the admin API's 201).
	acked, err := m.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "acknowledged", Source: SourceAdmin})
	if err != nil {
		t.Fatalf("Add() once space is back = %v", err)
	}
	m.Close()

	m2, err := open()
	if err != nil {
		t.Fatalf("restart: OpenMemory() = %v; the acknowledged entry %s is in a log that no longer opens", err, acked.ID)
	}
	defer m2.Close()
	for _, jti := range []string{"first", "acknowledged"} {
		if err := m2.Index().Check("https://a/", &Token{JTI: jti}, now); !errors.Is(err, ErrRevoked) {
			t.Errorf("after restart, Check(jti %q) = %v, want revoked", jti, err)
		}
	}
}

// Two stores on one state_dir (a second serve started before the first
// exited, a copy of the unit pointed at the same directory): the second's
// OpenMemory rewrites the log by rename, and every later Add of the first,
// acknowledged, went to a file no longer in the directory.
func TestMemorySecondOpenOfDir(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Memory, error) {
		return OpenMemory(MemoryOptions{Dir: dir, Retention: time.Hour, Now: func() time.Time { return t0 }})
	}
	a, err := open()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := open()
	if err == nil {
		defer b.Close()
	} else {
		return // refused while the first holds the directory: nothing can be lost
	}
	ctx := context.Background()
	acked, err := a.Add(ctx, Entry{Issuer: "https://a/", Kind: KindJTI, Value: "acked-by-first", Source: SourceAdmin})
	if err != nil {
		return // the first no longer acknowledges: nothing lost either
	}
	a.Close()
	b.Close()
	c, err := open()
	if err != nil {
		t.Fatalf("restart: OpenMemory() = %v", err)
	}
	defer c.Close()
	if err := c.Index().Check("https://a/", &Token{JTI: "acked-by-first"}, t0); !errors.Is(err, ErrRevoked) {
		t.Errorf("a second store opened the state_dir beside the first; the first's acknowledged entry %s is gone after a restart (Check = %v)", acked.ID, err)
	}
}
