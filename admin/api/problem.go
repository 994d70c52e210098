package api

// Problem is an RFC 7807 problem body, the same shape the payment link
// service answers with.
type Problem struct {
	Type   string              `json:"type"`
	Title  string              `json:"title"`
	Status int                 `json:"status"`
	Errors map[string][]string `json:"errors,omitempty"`
}
