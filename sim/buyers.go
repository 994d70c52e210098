package sim

import (
	"math/rand/v2"
)

// BuyerActs counts what ActAsBuyers did.
type BuyerActs struct{ Paid, Finalized, Reversed, Cancelled int }

// Add returns the sum of two counts, for runs that act in rounds.
func (a BuyerActs) Add(b BuyerActs) BuyerActs {
	return BuyerActs{a.Paid + b.Paid, a.Finalized + b.Finalized, a.Reversed + b.Reversed, a.Cancelled + b.Cancelled}
}

// ActAsBuyers drives the buyers of the given orders: about 60% pay (a third
// of those are then finalized, a tenth reversed), 20% cancel, the rest stay
// pending. The demo, the lab and the end-to-end tests share this mix so
// that their figures compare.
func (s *Server) ActAsBuyers(codes []string, rng *rand.Rand) BuyerActs {
	var a BuyerActs
	for i, code := range codes {
		switch r := rng.Float64(); {
		case r < 0.6:
			if _, err := s.Pay(code, s.Buyer(i)); err != nil {
				continue
			}
			a.Paid++
			switch r2 := rng.Float64(); {
			case r2 < 0.33:
				if _, err := s.Finalize(code); err == nil {
					a.Finalized++
				}
			case r2 < 0.43:
				if _, err := s.Reverse(code); err == nil {
					a.Reversed++
				}
			}
		case r < 0.8:
			if _, err := s.Cancel(code); err == nil {
				a.Cancelled++
			}
		}
	}
	return a
}
