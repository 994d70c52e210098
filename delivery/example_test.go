package delivery_test

import (
	"encoding/json"
	"io"
	"log"
	"net/http"

	"github.com/ordersync/ordersync/delivery"
)

// A fulfilment system's handler: verify, then deduplicate by webhook-id
// (a delivery may arrive more than once), then act.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the endpoint's secret
	http.HandleFunc("/orders", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		if err := delivery.Verify(secret, r.Header, body, 0); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev delivery.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		id := r.Header.Get(delivery.HeaderID)
		log.Printf("%s %s", id, ev.Type) // skip it if id was already handled
		w.WriteHeader(http.StatusNoContent)
	})
}
