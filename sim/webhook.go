package sim

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"

	"github.com/ordersync/ordersync"
)

// SignatureHeader carries base64(HMAC-SHA256(WebhookSecret, body)).
const SignatureHeader = "X-H4B-Hmac-Sha256"

// OrderTypeOtherProduct is the orderType of the other product's events that
// OtherProductRate mixes in.
const OrderTypeOtherProduct = "COUPON_APP"

// orderTypeSubscription is the orderType of subscription events.
const orderTypeSubscription = "SUBSCRIPTION"

// eventDescriptions are the Spanish descriptions real deployments send.
var eventDescriptions = map[ordersync.EventType]string{
	ordersync.EventCreated:                  "La orden fue creada",
	ordersync.EventSuccessPayment:           "La orden fue pagada exitosamente",
	ordersync.EventCancelled:                "La orden fue cancelada",
	ordersync.EventFinalized:                "La orden fue finalizada",
	ordersync.EventSuccessReverse:           "La orden fue reversada exitosamente",
	ordersync.EventSubscriptionConfirmation: "La suscripción fue confirmada",
	ordersync.EventSubscriptionPayment:      "El pago de la suscripción fue exitoso",
	ordersync.EventSubscriptionCancelled:    "La suscripción fue cancelada",
}

var subscriptionEvents = []ordersync.EventType{
	ordersync.EventSubscriptionConfirmation, ordersync.EventSubscriptionPayment, ordersync.EventSubscriptionCancelled,
}

// Sign returns the X-H4B-Hmac-Sha256 value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// jsonBuffer writes JSON objects with keys in a fixed order, as the real
// sender does.
type jsonBuffer struct {
	bytes.Buffer
	fields int
}

func (b *jsonBuffer) key(k string) {
	if b.fields > 0 {
		b.WriteByte(',')
	}
	b.fields++
	b.str(k)
	b.WriteByte(':')
}

func (b *jsonBuffer) str(s string) {
	enc, _ := json.Marshal(s) // a string always encodes
	b.Write(enc)
}

// strOrNull writes "" as null, as the sender does for absent references.
func (b *jsonBuffer) strOrNull(s string) {
	if s == "" {
		b.WriteString("null")
		return
	}
	b.str(s)
}

func (b *jsonBuffer) raw(v []byte) {
	if v == nil {
		b.WriteString("null")
		return
	}
	b.Write(v)
}

// eventBody builds a webhook body in the real key order:
// orderId, orderReference, orderType, description, metadata, level, type.
func eventBody(orderID ordersync.ID, reference, orderType string, t ordersync.EventType, metadata []byte) []byte {
	var b jsonBuffer
	b.WriteByte('{')
	b.key("orderId")
	b.str(string(orderID))
	b.key("orderReference")
	b.strOrNull(reference)
	b.key("orderType")
	b.str(orderType)
	b.key("description")
	b.str(eventDescriptions[t])
	b.key("metadata")
	b.raw(metadata)
	b.key("level")
	b.str("Info")
	b.key("type")
	b.str(string(t))
	b.WriteByte('}')
	return b.Bytes()
}

// subscriptionBody builds a subscription event: no orderId, a
// subscriptionId.
func subscriptionBody(subscriptionID int64, t ordersync.EventType) []byte {
	var b jsonBuffer
	b.WriteByte('{')
	b.key("subscriptionId")
	b.str(strconv.FormatInt(subscriptionID, 10))
	b.key("orderType")
	b.str(orderTypeSubscription)
	b.key("description")
	b.str(eventDescriptions[t])
	b.key("metadata")
	b.raw(nil)
	b.key("level")
	b.str("Info")
	b.key("type")
	b.str(string(t))
	b.WriteByte('}')
	return b.Bytes()
}

// TransactionDateLayout is the format of metadata.TransactionDate: seven
// fractional digits and no zone (the instant is UTC).
const TransactionDateLayout = "2006-01-02T15:04:05.0000000"

// paymentMetadata is the flat metadata object of a SuccessPayment event:
// the payment's fields, then the order's own metadata entries (a name that
// repeats an earlier key is left out: an object has one value per key).
func paymentMetadata(d *ordersync.Order, p *payment) []byte {
	var b jsonBuffer
	seen := map[string]bool{}
	field := func(k, v string) {
		seen[k] = true
		b.key(k)
		b.str(v)
	}
	b.WriteByte('{')
	field("PaymentId", p.paymentID)
	field("ChargeId", p.chargeID)
	field("TransactionDate", p.transactionDate.UTC().Format(TransactionDateLayout))
	field("AuthorizationCode", p.authorization)
	field("Status", "Pagada")
	field("BuyerName", p.buyer.Name)
	field("BuyerEmail", p.buyer.Email)
	field("BuyerPhone", p.buyer.Phone)
	field("BuyerExternalId", "")
	seen["orderDetail"] = true
	b.key("orderDetail")
	b.WriteByte('[')
	for i, li := range d.LineItems {
		if i > 0 {
			b.WriteByte(',')
		}
		var item jsonBuffer
		item.WriteByte('{')
		item.key("itemId")
		item.str(string(li.ProductID))
		item.key("name")
		item.str(li.Name)
		item.key("quantity")
		item.WriteString(strconv.Itoa(li.Quantity))
		item.key("price")
		item.str(li.Price.String())
		item.WriteByte('}')
		b.Write(item.Bytes())
	}
	b.WriteByte(']')
	for _, m := range d.Metadata {
		if !seen[m.Name] {
			field(m.Name, m.Value)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// emitOrderEventLocked queues the webhook of an order change, and the extra
// events the faults ask for. Holding Server.mu keeps an order's events in
// the order of its changes (before delivery faults reorder them).
func (s *Server) emitOrderEventLocked(o *order, t ordersync.EventType, pay *payment) {
	if s.hooks == nil {
		return
	}
	var md []byte
	if pay != nil {
		md = paymentMetadata(&o.detail, pay)
	}
	f := s.faults.Load()
	s.hooks.enqueue(eventBody(o.detail.OrderID, o.detail.OrderReference, ordersync.OrderTypePaymentLink, t, md), f)
	if s.dice.chance(streamOtherProduct, f.OtherProductRate) {
		s.counters.fault(streamOtherProduct)
		id := ordersync.ID(strconv.FormatInt(s.nextForeignID, 10))
		s.nextForeignID++
		s.hooks.enqueue(eventBody(id, "", OrderTypeOtherProduct, ordersync.EventSuccessPayment, nil), f)
	}
	if s.dice.chance(streamSubscription, f.SubscriptionRate) {
		s.counters.fault(streamSubscription)
		id := s.nextSubID
		s.nextSubID++
		s.hooks.enqueue(subscriptionBody(id, subscriptionEvents[id%int64(len(subscriptionEvents))]), f)
	}
}
