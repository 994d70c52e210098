package admin

import (
	"time"
)

// auditTimeout bounds writing one audit record or ending a session after
// the request's own context may have ended.
const auditTimeout = 5 * time.Second
