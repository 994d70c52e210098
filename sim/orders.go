package sim

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ordersync/ordersync"
)

// CreatePaymentLink is POST /paymentlink/checkout without HTTP: it validates
// params (a *ordersync.ValidationError in Config.Language when invalid),
// creates a PENDING order and queues its Created webhook.
func (s *Server) CreatePaymentLink(params ordersync.PaymentLinkParams) (ordersync.PaymentLinkResult, error) {
	if verr := s.validate(&params); verr != nil {
		s.counters.checkoutsRejected.Add(1)
		return ordersync.PaymentLinkResult{}, fmt.Errorf("create payment link: %w", verr)
	}
	now := s.cfg.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.newOrderLocked(&params, now)
	s.counters.checkouts.Add(1)
	return ordersync.PaymentLinkResult{
		OrderCode:      o.detail.OrderCode,
		OrderID:        o.detail.OrderID,
		PaymentLinkURL: o.detail.PaymentLinkURL,
	}, nil
}

var unknownSKUMessages = map[ordersync.Language]string{
	ordersync.English: "The product with SKU '%s' does not exist.",
	ordersync.Spanish: "El producto con SKU '%s' no existe.",
}

var validationTitles = map[ordersync.Language]string{
	ordersync.English: "One or more validation errors occurred.",
	ordersync.Spanish: "Se produjeron uno o más errores de validación.",
}

// validate applies the interface's rules (shared with the client) and what
// only the service knows: which SKUs its catalogue holds.
func (s *Server) validate(p *ordersync.PaymentLinkParams) *ordersync.ValidationError {
	lang := s.cfg.Language
	verr := &ordersync.ValidationError{Title: validationTitles[lang]}
	if err := p.Validate(lang); err != nil && !errors.As(err, &verr) {
		verr.Fields = map[string][]string{"$": {err.Error()}}
	}
	for i, it := range p.LineItems {
		sku := strings.TrimSpace(it.SKU)
		if sku == "" || it.Product != nil {
			continue
		}
		if _, ok := s.catalogue[sku]; !ok {
			if verr.Fields == nil {
				verr.Fields = map[string][]string{}
			}
			field := fmt.Sprintf("lineItems[%d].sku", i)
			verr.Fields[field] = append(verr.Fields[field], fmt.Sprintf(unknownSKUMessages[lang], sku))
		}
	}
	if len(verr.Fields) == 0 {
		return nil
	}
	return verr
}

var zeroAmount = ordersync.MustAmount("0.00")

const codeAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func (s *Server) newCodeLocked() string {
	var b [7]byte
	for {
		for i := range b {
			b[i] = codeAlphabet[s.rng.IntN(len(codeAlphabet))]
		}
		if _, taken := s.orders[string(b[:])]; !taken {
			return string(b[:])
		}
	}
}

func (s *Server) newOrderLocked(p *ordersync.PaymentLinkParams, now time.Time) *order {
	code := s.newCodeLocked()
	id := ordersync.ID(strconv.FormatInt(s.nextOrderID, 10))
	s.nextOrderID++
	created := now.UTC().Truncate(time.Millisecond)
	minutes := ordersync.DefaultExpirationMinutes
	if p.ExpirationMinutes != nil {
		minutes = *p.ExpirationMinutes
	}
	name := p.OrderName
	if name == "" {
		name = ordersync.DefaultOrderName
	}
	d := ordersync.Order{
		OrderID:        id,
		OrderCode:      code,
		OrderReference: p.OrderReference,
		Name:           name,
		Description:    p.OrderDescription,
		LineItems:      []ordersync.LineItem{},
		OrderStatus:    ordersync.StatusPending,
		TotalDetails:   ordersync.Totals{ShippingAmount: zeroAmount, DiscountAmount: zeroAmount, SurchargeAmount: zeroAmount},
		Metadata:       append([]ordersync.MetadataEntry{}, p.Metadata...),
		PaymentLinkURL: s.cfg.LinkBaseURL + "/" + code,
		SuccessURL:     p.SuccessURL,
		CancelURL:      p.CancelURL,
		Store:          s.cfg.Store,
		Created:        ordersync.Timestamp{Time: created},
	}
	if p.Amount != nil {
		d.Subtotal = *p.Amount
	} else {
		d.Subtotal = ordersync.AmountFromInt(0)
		for _, it := range p.LineItems {
			var li ordersync.LineItem
			if it.Product != nil {
				li = ordersync.LineItem{
					ProductID: ordersync.ID(strconv.FormatInt(s.nextProductID, 10)),
					Name:      it.Product.Name,
					Price:     *it.Product.Price,
					ImageURL:  it.Product.ImageURL,
				}
				s.nextProductID++
			} else {
				cp := s.catalogue[strings.TrimSpace(it.SKU)]
				li = ordersync.LineItem{ProductID: cp.id, SKU: cp.SKU, Name: cp.Name, Price: cp.Price, ImageURL: cp.ImageURL}
			}
			li.Quantity = it.Quantity
			li.SubTotal = li.Price.MulInt(int64(it.Quantity))
			d.Subtotal = d.Subtotal.Add(li.SubTotal)
			d.LineItems = append(d.LineItems, li)
		}
	}
	d.Total = d.Subtotal.Add(d.TotalDetails.ShippingAmount).Sub(d.TotalDetails.DiscountAmount).Add(d.TotalDetails.SurchargeAmount)
	o := &order{detail: d, expiresAt: created.Add(time.Duration(minutes) * time.Minute)}
	o.encode()
	s.orders[code] = o
	s.list = append(s.list, o)
	s.byStatus[ordersync.StatusPending]++
	heap.Push(&s.expiries, o)
	s.emitOrderEventLocked(o, ordersync.EventCreated, nil)
	return o
}

func (o *order) encode() {
	doc, err := json.Marshal(o.detail)
	if err != nil {
		// Every field of an order detail is encodable; this is a bug.
		panic(fmt.Sprintf("encode order %s: %v", o.detail.OrderCode, err))
	}
	o.doc = doc
}

// Action is a change of an order's life cycle.
type Action string

// The actions of the life cycle.
const (
	ActionPay      Action = "pay"
	ActionCancel   Action = "cancel"
	ActionFinalize Action = "finalize"
	ActionReverse  Action = "reverse"
	ActionExpire   Action = "expire"
)

type transition struct {
	from  ordersync.Status
	to    ordersync.Status
	event ordersync.EventType
}

var transitions = map[Action]transition{
	ActionPay:      {ordersync.StatusPending, ordersync.StatusPaid, ordersync.EventSuccessPayment},
	ActionCancel:   {ordersync.StatusPending, ordersync.StatusCancelled, ordersync.EventCancelled},
	ActionFinalize: {ordersync.StatusPaid, ordersync.StatusFinalized, ordersync.EventFinalized},
	ActionReverse:  {ordersync.StatusPaid, ordersync.StatusCancelled, ordersync.EventSuccessReverse},
	ActionExpire:   {ordersync.StatusPending, ordersync.StatusCancelled, ordersync.EventCancelled},
}

// TransitionError is an action the order's status does not allow. It
// matches ordersync.ErrConflict.
type TransitionError struct {
	OrderCode string
	Action    Action
	Status    ordersync.Status // the order's status
	Want      ordersync.Status // the status the action needs
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("%s order %s: order is %s, %s needs %s", e.Action, e.OrderCode, e.Status, e.Action, e.Want)
}

func (e *TransitionError) Unwrap() error { return ordersync.ErrConflict }

// DefaultBuyer pays when the control API is given no buyer.
var DefaultBuyer = ordersync.Buyer{Name: "Cliente Demo", Phone: "+50370000000", Email: "cliente.demo@example.test"}

// Pay records a payment by buyer: PENDING → PAID, webhook SuccessPayment.
func (s *Server) Pay(code string, buyer ordersync.Buyer) (ordersync.Order, error) {
	return s.Apply(code, ActionPay, &buyer)
}

// Cancel cancels an unpaid order: PENDING → CANCELLED, webhook Cancelled.
func (s *Server) Cancel(code string) (ordersync.Order, error) {
	return s.Apply(code, ActionCancel, nil)
}

// Finalize closes a paid order: PAID → FINALIZED, webhook Finalized.
func (s *Server) Finalize(code string) (ordersync.Order, error) {
	return s.Apply(code, ActionFinalize, nil)
}

// Reverse reverses a payment: PAID → CANCELLED, webhook SuccessReverse.
func (s *Server) Reverse(code string) (ordersync.Order, error) {
	return s.Apply(code, ActionReverse, nil)
}

// Apply performs action on the order and returns its new detail. The error
// matches ordersync.ErrNotFound for an unknown code, and is a
// *TransitionError when the status does not allow the action. buyer is used
// by ActionPay only (nil: DefaultBuyer, with a phone of the store's country).
func (s *Server) Apply(code string, action Action, buyer *ordersync.Buyer) (ordersync.Order, error) {
	tr, ok := transitions[action]
	if !ok {
		return ordersync.Order{}, fmt.Errorf("%s order %s: unknown action", action, code)
	}
	now := s.cfg.Clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.orders[code]
	if !ok {
		return ordersync.Order{}, fmt.Errorf("%s order %s: %w", action, code, ordersync.ErrNotFound)
	}
	s.expireIfDueLocked(o, now)
	if o.detail.OrderStatus != tr.from {
		return ordersync.Order{}, &TransitionError{OrderCode: code, Action: action, Status: o.detail.OrderStatus, Want: tr.from}
	}
	var pay *payment
	if action == ActionPay {
		if buyer == nil || *buyer == (ordersync.Buyer{}) {
			b := s.defaultBuyer()
			buyer = &b
		}
		pay = s.newPaymentLocked(o, *buyer, now)
	}
	s.changeLocked(o, tr, pay)
	s.log.Debug("order changed", "order_code", code, "action", string(action), "status", string(tr.to))
	return cloneOrder(o.detail), nil
}

// payment is what a payment adds to the SuccessPayment webhook beyond the
// order detail.
type payment struct {
	buyer           ordersync.Buyer
	paymentID       string
	chargeID        string
	transactionDate time.Time
	authorization   string
}

func (s *Server) newPaymentLocked(o *order, buyer ordersync.Buyer, now time.Time) *payment {
	p := &payment{
		buyer:           buyer,
		paymentID:       fmt.Sprintf("pay_%010x", s.rng.Uint64()&0xffffffffff),
		chargeID:        fmt.Sprintf("ch_%08x", s.rng.Uint32()),
		transactionDate: now,
		authorization:   fmt.Sprintf("%06d", s.rng.IntN(1000000)),
	}
	b := buyer
	o.detail.Payment = &ordersync.Payment{
		AuthorizationCode: p.authorization,
		VoucherURL:        s.cfg.LinkBaseURL + "/voucher/" + o.detail.OrderCode,
		Buyer:             &b,
	}
	return p
}

func (s *Server) changeLocked(o *order, tr transition, pay *payment) {
	s.byStatus[o.detail.OrderStatus]--
	s.byStatus[tr.to]++
	o.detail.OrderStatus = tr.to
	o.encode()
	s.emitOrderEventLocked(o, tr.event, pay)
}

// expireIfDueLocked cancels a PENDING order whose link has expired, and
// reports whether it did.
func (s *Server) expireIfDueLocked(o *order, now time.Time) bool {
	if o.detail.OrderStatus != ordersync.StatusPending || !now.After(o.expiresAt) {
		return false
	}
	s.changeLocked(o, transitions[ActionExpire], nil)
	return true
}

// ExpireDue cancels every PENDING order whose link expired by the Clock and
// returns how many. Reads expire orders too; the sweep calls this.
func (s *Server) ExpireDue() int {
	now := s.cfg.Clock()
	s.mu.RLock()
	due := len(s.expiries) > 0 && now.After(s.expiries[0].expiresAt)
	s.mu.RUnlock()
	if !due {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for len(s.expiries) > 0 && now.After(s.expiries[0].expiresAt) {
		o := heap.Pop(&s.expiries).(*order)
		if s.expireIfDueLocked(o, now) {
			n++
		}
	}
	return n
}

// lookup returns the order with code after expiring it if due, and its
// encoded detail.
func (s *Server) lookup(code string) (*order, []byte) {
	s.mu.RLock()
	o, ok := s.orders[code]
	if !ok {
		s.mu.RUnlock()
		return nil, nil
	}
	doc := o.doc
	pending := o.detail.OrderStatus == ordersync.StatusPending
	expiresAt := o.expiresAt
	s.mu.RUnlock()
	if pending {
		if now := s.cfg.Clock(); now.After(expiresAt) {
			s.mu.Lock()
			s.expireIfDueLocked(o, now)
			doc = o.doc
			s.mu.Unlock()
		}
	}
	return o, doc
}

// Order returns the order's current detail, as GET would (without counting
// a GET or injecting faults).
func (s *Server) Order(code string) (ordersync.Order, bool) {
	o, _ := s.lookup(code)
	if o == nil {
		return ordersync.Order{}, false
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return cloneOrder(o.detail), true
}

// Orders returns every order's current detail in creation order: the truth
// a mirror is compared against.
func (s *Server) Orders() []ordersync.Order {
	s.ExpireDue()
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]ordersync.Order, len(s.list))
	for i, o := range s.list {
		out[i] = cloneOrder(o.detail)
	}
	return out
}

// ExpiresAt returns when the order's link expires.
func (s *Server) ExpiresAt(code string) (time.Time, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := s.orders[code]
	if !ok {
		return time.Time{}, false
	}
	return o.expiresAt, true
}

func cloneOrder(d ordersync.Order) ordersync.Order {
	d.LineItems = slices.Clone(d.LineItems)
	d.Metadata = slices.Clone(d.Metadata)
	if d.Payment != nil {
		p := *d.Payment
		if p.Buyer != nil {
			b := *p.Buyer
			p.Buyer = &b
		}
		d.Payment = &p
	}
	return d
}

// expiryHeap orders orders by link expiry.
type expiryHeap []*order

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].expiresAt.Before(h[j].expiresAt) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(*order)) }
func (h *expiryHeap) Pop() any {
	old := *h
	o := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return o
}
