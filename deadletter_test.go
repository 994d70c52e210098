package ordersync

import "testing"

func TestValidateDeadLetter(t *testing.T) {
	ok := DeadLetter{MsgID: "m1", Account: "default", Reason: "malformed"}
	tests := []struct {
		name string
		edit func(*DeadLetter)
		want string
	}{
		{"valid", func(*DeadLetter) {}, ""},
		{"no MsgID", func(dl *DeadLetter) { dl.MsgID = "" }, "MsgID is required"},
		{"no account", func(dl *DeadLetter) { dl.Account = "" }, "Account is required"},
		{"no reason", func(dl *DeadLetter) { dl.Reason = "" }, "Reason is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dl := ok
			tt.edit(&dl)
			got := ""
			if err := ValidateDeadLetter(dl); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("ValidateDeadLetter = %q, want %q", got, tt.want)
			}
		})
	}
}
