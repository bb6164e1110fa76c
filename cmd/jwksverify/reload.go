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
// its content changes (polled every configPollInterval, when path is a
// regular file: a pipe is reloaded on SIGHUP only), until ctx is done.
// load reads and plans the file; a file that does not load is a failed
// reload (service.ReloadFailed), reported once per content.
func watch(ctx context.Context, svc *service.Service, path string, load func() (*config.Plan, error), hup <-chan os.Signal, logger *slog.Logger) {
	t := time.NewTicker(configPollInterval)
	defer t.Stop()
	seen := svc.Plan().Hash // the content last tried, valid or not
	// After a failed reload, the running plan's mint.keys_file and its
	// content then: a change of that file tries the configuration again.
	// An emergency rotation changes the configuration (a new signing_kid)
	// and the keys file (without the leaked key) in either order (a
	// ConfigMap and a Secret); seen first, the new signing_kid fails
	// against the old keys file, and the running minter refuses the new
	// keys file (its own signing_kid is gone), so without the retry the
	// removed key would go on signing and being published.
	var retryKeys, retrySum string
	keysChanged := func() bool {
		if retryKeys == "" {
			return false
		}
		h, err := config.FileHash(retryKeys)
		return err == nil && h != retrySum
	}
	// keysNow is the running plan's mint.keys_file and its content,
	// taken before a reload is tried: a change made while it runs (the
	// keys file written right after the configuration) still retries.
	keysNow := func() (string, string) {
		m := svc.Plan().Mint
		if m == nil {
			return "", ""
		}
		h, _ := config.FileHash(m.KeysFile)
		return m.KeysFile, h
	}
	// The running plan's secret files (config.Plan.Secrets) and their
	// content as last tried: the plan holds what it read, so a secret
	// written into its file (a leaked HMAC secret rotated, perhaps after
	// the configuration's new secret_kid was loaded with the old content)
	// is applied only by loading the configuration again.
	secrets := svc.Plan().Secrets
	secretsChanged := func() string {
		for path, sum := range secrets {
			if h, err := config.FileHash(path); err == nil && h != sum {
				return path
			}
		}
		return ""
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			logger.Info("SIGHUP: reloading the configuration", "file", path)
		case <-t.C:
			if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
				// Being replaced, or a pipe (--config <(…)): read whole at
				// start, its writer gone, it would read as an empty
				// "change" (a failed reload at every start); one with a
				// silent writer would block the watch and the shutdown.
				// SIGHUP reloads it.
				continue
			}
			h, err := config.FileHash(path)
			switch {
			case err != nil:
				continue // unreadable for a moment (being replaced): wait for its content
			case h != seen:
				logger.Info("configuration file changed: reloading", "file", path)
			case keysChanged():
				logger.Info("mint.keys_file changed after a failed reload: reloading the configuration", "file", path)
			default:
				changed := secretsChanged()
				if changed == "" {
					continue
				}
				logger.Info("a file the configuration read changed: reloading the configuration", "file", path, "changed", changed)
			}
		}
		retryKeys, retrySum = "", ""
		keys, keysSum := keysNow()
		failed := func() { retryKeys, retrySum = keys, keysSum }
		// The content as it is before the load: a load that fails read it,
		// or a later one (then the next poll tries that again). Hashed
		// after the load, a file written in place (truncated, then
		// written) whose first half failed recorded its complete content
		// as tried, and that content was never loaded.
		before, herr := config.FileHash(path)
		secretsBefore := make(map[string]string, len(secrets))
		for p := range secrets {
			// Unreadable now (being replaced): "" is tried again once it
			// can be read.
			secretsBefore[p], _ = config.FileHash(p)
		}
		plan, err := load()
		if plan != nil {
			seen = plan.Hash
			secrets = plan.Secrets // what this load read
		} else {
			if herr == nil {
				seen = before // an invalid content is reported once, not every poll
			}
			secrets = secretsBefore // likewise a refused secret
		}
		if err != nil {
			svc.ReloadFailed(err)
			failed()
			continue
		}
		if err := svc.Reload(ctx, plan); err != nil { // counted and logged by the service
			failed()
		}
	}
}
