package ordersync

// PaymentLinkParams is the body of POST /paymentlink/checkout. Exactly one of
// LineItems (Method 1) and Amount (Method 2) is set.
type PaymentLinkParams struct {
	LineItems         []LineItemParams `json:"lineItems,omitempty"`
	Amount            *Amount          `json:"amount,omitempty"`
	OrderReference    string           `json:"orderReference,omitempty"`
	OrderName         string           `json:"orderName,omitempty"`
	OrderDescription  string           `json:"orderDescription,omitempty"`
	SuccessURL        string           `json:"successUrl,omitempty"`
	CancelURL         string           `json:"cancelUrl,omitempty"`
	LocationCode      string           `json:"locationCode,omitempty"`
	Metadata          []MetadataEntry  `json:"metadata,omitempty"`
	ExpirationMinutes *int             `json:"expirationMinutes,omitempty"`
}

// LineItemParams is one line of a Method 1 request: a portal product by SKU,
// or a one-time Product, never both.
type LineItemParams struct {
	SKU      string         `json:"sku,omitempty"`
	Product  *ProductParams `json:"product,omitempty"`
	Quantity int            `json:"quantity"`
}

// ProductParams is a one-time product in a line item.
type ProductParams struct {
	Name             string  `json:"name"`
	Price            *Amount `json:"price"`
	ImageURL         string  `json:"imageUrl,omitempty"`
	RequiresShipping *bool   `json:"requiresShipping,omitempty"`
}

// PaymentLinkResult is the 200 answer of POST /paymentlink/checkout.
type PaymentLinkResult struct {
	OrderCode      string `json:"orderCode"`
	OrderID        ID     `json:"orderId"`
	PaymentLinkURL string `json:"paymentLinkUrl"`
}

// Defaults of the interface, applied by the service when a field is absent.
const (
	DefaultOrderName         = "PaymentLink Order"
	DefaultExpirationMinutes = 1440
)

// Length limits of the interface, in characters.
const (
	MaxOrderReference   = 255
	MaxOrderName        = 255
	MaxOrderDescription = 2048
	MaxImageURL         = 512
)
