package ordersync

import "testing"

func TestStatus(t *testing.T) {
	tests := []struct {
		in                   string
		want                 Status
		canChange, paidState bool
	}{
		{"PENDING", StatusPending, true, false},
		{"paid", StatusPaid, true, true},
		{" Cancelled ", StatusCancelled, false, false},
		{"FINALIZED", StatusFinalized, false, true},
	}
	for _, tt := range tests {
		st, err := ParseStatus(tt.in)
		if err != nil || st != tt.want {
			t.Errorf("ParseStatus(%q) = %q, %v", tt.in, st, err)
			continue
		}
		if !st.Valid() || st.CanChange() != tt.canChange || st.IsPaidState() != tt.paidState {
			t.Errorf("%s: valid %v, CanChange %v, IsPaidState %v", st, st.Valid(), st.CanChange(), st.IsPaidState())
		}
	}
	if _, err := ParseStatus("REFUNDED"); err == nil {
		t.Error("ParseStatus accepted REFUNDED")
	}
	if unknown := Status("REFUNDED"); unknown.Valid() || !unknown.CanChange() {
		t.Error("an unknown status must be invalid and still re-fetched")
	}
	if len(Statuses) != 4 {
		t.Errorf("Statuses = %v", Statuses)
	}
}
