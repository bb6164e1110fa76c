package fileread

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRegular(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		path  string
		limit int64
		want  string
		err   error // nil: no refusal
	}{
		{"whole", file, 10, "0123456789", nil},
		{"over-the-limit", file, 9, "", ErrTooLarge},
		{"directory", dir, 10, "", ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), 10, "", os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, err := Regular(tt.path, tt.limit)
			if tt.err == nil {
				if err != nil || string(b) != tt.want {
					t.Fatalf("Regular() = %q, %v; want %q", b, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.err) || b != nil {
				t.Errorf("Regular() = %q, %v; want a refusal wrapping %v", b, err, tt.err)
			}
		})
	}
}

func TestAny(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte("listen: :8080\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Any(file, 64); err != nil || string(b) != "listen: :8080\n" {
		t.Errorf("Any() = %q, %v", b, err)
	}
	if b, err := Any(file, 4); !errors.Is(err, ErrTooLarge) || b != nil {
		t.Errorf("Any() over the limit = %q, %v; want ErrTooLarge", b, err)
	}
}
