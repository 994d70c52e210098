package webhook

import (
	"net/http"
	"strconv"
)

// reply is a prebuilt answer body with its header values, built once:
// net/http only reads the header slices, so every response can share them.
type reply struct {
	body          []byte
	contentLength []string
}

func newReply(body string) reply {
	return reply{body: []byte(body), contentLength: []string{strconv.Itoa(len(body))}}
}

var (
	contentTypeJSON = []string{"application/json"}
	allowPost       = []string{http.MethodPost}

	bodyAccepted         = newReply(`{"status":"accepted"}`)
	bodyDuplicate        = newReply(`{"status":"duplicate"}`)
	bodyIgnored          = newReply(`{"status":"ignored"}`)
	bodyMissingSignature = newReply(`{"status":"unauthorized","error":"missing signature"}`)
	bodyInvalidSignature = newReply(`{"status":"unauthorized","error":"invalid signature"}`)
	bodyBadRequest       = newReply(`{"status":"bad_request","error":"not a webhook event: want a JSON object in UTF-8"}`)
	bodyUnreadable       = newReply(`{"status":"bad_request","error":"the body could not be read"}`)
	bodyTooLarge         = newReply(`{"status":"too_large"}`)
	bodyNotAllowed       = newReply(`{"status":"method_not_allowed"}`)
	bodyUnknownAccount   = newReply(`{"status":"unknown_account"}`)
	bodyUnavailable      = newReply(`{"status":"unavailable","error":"the queue did not acknowledge; retry later"}`)
	bodyNotAdmitted      = newReply(`{"status":"unavailable","error":"webhooks cannot be stored now (disk space); retry later"}`)
	bodyBusy             = newReply(`{"status":"busy","error":"too many large bodies in flight; retry later"}`)
)

func (rc *Receiver) answer(w http.ResponseWriter, acct *account, status int, o outcome, r reply) {
	acct.requests[o].Inc()
	acct.counts[o].Add(1)
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = r.contentLength
	w.WriteHeader(status)
	w.Write(r.body)
}
