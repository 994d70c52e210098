package store

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// On SQLite an outbox row keeps its payload as a zstd frame primed with a
// dictionary of the order document's shape (its member names and the
// values every merchant's orders share), about a third of the JSON's
// size: the outbox holds a copy of the order per message until the pruner
// takes it, the largest part of the data directory. The relay publishes
// the JSON, so NATS subscribers and HTTP endpoints see no change.
//
// PostgreSQL keeps the JSON as it is: several processes of different
// releases may share its outbox in a rolling upgrade, and a relay of an
// earlier release publishes the column's bytes as they are. SQLite has one
// process; going back to an earlier release there needs the outbox sent
// first (docs/deployment.md).
//
// A payload is read as a zstd frame when it starts with zstd's magic
// number, which no JSON document does; rows written raw (by an earlier
// release, or on PostgreSQL) are read as they are.
//
// A dictionary's bytes never change once released: the frame names it by
// id, so a new dictionary takes a new id and the reader keeps every
// earlier one.
const payloadDictID = 0x6f730001

var payloadDict = []byte(`{"account":"","cancelUrl":"https://","created":"T00:00:00.000Z","description":"",` +
	`"lineItems":[{"productId":,"sku":"","name":"","price":,"promoPrice":null,"quantity":1,"imageUrl":"https://","subTotal":}],` +
	`"metadata":[{"name":"","value":""}],"name":"","orderCode":"","orderId":,"orderReference":"","orderStatus":"PENDING",` +
	`"payment":{"authorizationCode":"","voucherUrl":"https://","buyer":{"name":"","phone":"+","email":"@"}},"paymentLinkUrl":"https://",` +
	`"store":{"name":"","countryCode":"","currencyCode":"USD","currencySymbol":"$","locale":"","timezone":"America/"},"subtotal":,` +
	`"successUrl":"https://","sync":{"firstSeenAt":"T00:00:00.000000Z","lastSyncedAt":"T00:00:00.000000Z","lastEventAt":"T00:00:00.000000Z",` +
	`"lastEventType":"SuccessPayment","fetchCount":,"fetchSeq":,"paidAt":"T00:00:00.000000Z","statusChangedAt":"T00:00:00.000000Z"},` +
	`"total":,"totalDetails":{"shippingAmount":0.00,"discountAmount":0.00,"surchargeAmount":0.00}}`)

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// payloadCodec is made on first use, so a process on PostgreSQL never
// holds the encoder's tables. Both are safe for concurrent use; each
// holds one frame's state at a time, as the apply encodes one batch at a
// time.
var payloadCodec = sync.OnceValues(func() (*zstd.Encoder, *zstd.Decoder) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true), zstd.WithEncoderDictRaw(payloadDictID, payloadDict))
	if err != nil {
		panic(fmt.Sprintf("outbox payload encoder: %v", err))
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(64<<20), zstd.WithDecoderDictRaw(payloadDictID, payloadDict))
	if err != nil {
		panic(fmt.Sprintf("outbox payload decoder: %v", err))
	}
	return enc, dec
})

// storedPayload is the bytes an outbox row keeps of payload.
func (db *DB) storedPayload(payload []byte) []byte {
	if db.dialect != DialectSQLite {
		return payload
	}
	enc, _ := payloadCodec()
	return enc.EncodeAll(payload, make([]byte, 0, len(payload)/2))
}

// outboxPayload is the payload an outbox row's bytes keep.
func outboxPayload(stored []byte) ([]byte, error) {
	if !bytes.HasPrefix(stored, zstdMagic) {
		return stored, nil
	}
	_, dec := payloadCodec()
	payload, err := dec.DecodeAll(stored, nil)
	if err != nil {
		return nil, fmt.Errorf("decompress the payload: %w", err)
	}
	return payload, nil
}
