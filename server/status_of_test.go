package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/jwksverify/jwksverify/server/internal/servertest"
	"github.com/jwksverify/jwksverify/verify"
)

// TestStatusOf: the status of an answer is its family's, whatever wraps it;
// an error without a class fails closed as 503; and the server's own
// rejections answer with exactly StatusOf (one home for the mapping, which
// the CLI's exit status also reads).
func TestStatusOf(t *testing.T) {
	family := func(err error) int {
		switch {
		case errors.Is(err, verify.ErrUnavailable):
			return http.StatusServiceUnavailable
		case errors.Is(err, verify.ErrDenied):
			return http.StatusForbidden
		}
		return http.StatusUnauthorized
	}
	type test struct {
		name string
		err  error
		want int
	}
	tests := []test{
		{"nil", nil, http.StatusOK},
		{"no class", errors.New("boom"), http.StatusServiceUnavailable},
		{"bare rejected family", verify.ErrRejected, http.StatusServiceUnavailable},
		{"bare denied family", fmt.Errorf("x: %w", verify.ErrDenied), http.StatusServiceUnavailable},
		{"bare unavailable family", verify.ErrUnavailable, http.StatusServiceUnavailable},
	}
	for _, s := range servertest.ClassSentinels {
		c := verify.Class(s)
		tests = append(tests,
			test{c, s, family(s)},
			test{c + " wrapped", fmt.Errorf("%w: detail", s), family(s)},
			test{c + " as verify.Error", fmt.Errorf("outer: %w", &verify.Error{Class: c, Err: fmt.Errorf("%w: d", s)}), family(s)},
		)
	}
	e := newEnv(t, envConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := StatusOf(tt.err); got != tt.want {
				t.Fatalf("StatusOf = %d, want %d", got, tt.want)
			}
			if tt.err == nil {
				return
			}
			d := e.srv.Decide(context.Background(), &Call{Endpoint: EndpointVerify, ReadErr: tt.err})
			if d.Status != tt.want {
				t.Fatalf("Decide answers %d, StatusOf %d", d.Status, tt.want)
			}
			if d.Class == "" {
				t.Fatal("Decide gave no class")
			}
		})
	}
}
