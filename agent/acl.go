package agent

import (
	"path/filepath"

	schedhttp "github.com/schedhq/sched/http"
)

// configureHTTPACL gives the HTTP server its token resolver. Tokens always
// exist (the management API always needs one); `acl { enabled = true }`
// turns on capability checks for /v1, which -dev leaves off. An operator
// re-arms bootstrap by writing the reset index into
// <data_dir>/server/acl-bootstrap-reset on the leader.
func (a *Agent) configureHTTPACL(cfg *schedhttp.Config) {
	// NewTokenResolver fails only without a store, and cfg has one.
	r, err := schedhttp.NewTokenResolver(schedhttp.TokenResolverConfig{
		Store:              cfg.Store,
		Enforce:            a.cfg.ACL.Enabled,
		BootstrapResetPath: filepath.Join(a.cfg.DataDir, "server", schedhttp.BootstrapResetFile),
	})
	if err != nil {
		panic(err)
	}
	cfg.ACL = r
}
