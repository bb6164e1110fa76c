package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/jwksverify/jwksverify/config"
	"github.com/jwksverify/jwksverify/service"
)

// configPollInterval is how often the configuration file is checked for a
// change of its content. Writes within one interval are one change (the
// debounce); a file replaced by rename (a Kubernetes ConfigMap) is seen
// like one written in place.
const configPollInterval = time.Second

// watch reloads svc from path on each signal from hup (SIGHUP) and when
// its content changes (polled every configPollInterval), until ctx is done.
// load reads and plans the file; a file that does not load is a failed
// reload (service.ReloadFailed), reported once per content.
func watch(ctx context.Context, svc *service.Service, path string, load func() (*config.Plan, error), hup <-chan os.Signal, logger *slog.Logger) {
	t := time.NewTicker(configPollInterval)
	defer t.Stop()
	seen := svc.Plan().Hash // the content last tried, valid or not
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			logger.Info("SIGHUP: reloading the configuration", "file", path)
		case <-t.C:
			h, err := config.FileHash(path)
			if err != nil || h == seen {
				continue // unreadable for a moment (being replaced): wait for its content
			}
			logger.Info("configuration file changed: reloading", "file", path)
		}
		plan, err := load()
		if plan != nil {
			seen = plan.Hash
		} else if h, herr := config.FileHash(path); herr == nil {
			seen = h // an invalid content is reported once, not every poll
		}
		if err != nil {
			svc.ReloadFailed(err)
			continue
		}
		_ = svc.Reload(ctx, plan) // counted and logged by the service
	}
}
