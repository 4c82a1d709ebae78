import Foundation
import Testing
import Till
import TillOrchestration
import TillGatewayKit
import TillTesting
import TillWorldline
@testable import TillWorldlineServer

/// Worldline Connect's amounts are "in cents with each amount having 2 decimals, regardless of the actual decimal
/// places the currency has. So JPY has no decimals in it currency, but you will need to add two zeros as cents"
/// (the Connect API reference, `s2sapi/v1/en_US/json/services/convertAmount.html`; connect-sdk-python3
/// `amount_of_money.py`: "Amount in cents and always having 2 decimals"). Till's money is in ISO 4217 minor units.
@Suite("Worldline amounts: two decimals whatever the currency")
struct WorldlineAmountTests {
    @Test("EUR 23.45 is 2345 both ways; ¥1000 is 100000 and back; KWD, BHD and CLF are refused by name; an amount of yen with cents is refused")
    func conversion() throws {
        let eur = try Currency(code: "EUR"), jpy = try Currency(code: "JPY")
        #expect(try WorldlineAmount.wire(Money(minorUnits: 2345, currency: eur)) == 2345)
        #expect(try WorldlineAmount.wire(Money(minorUnits: 1000, currency: jpy)) == 100_000)
        #expect(try WorldlineAmount.money(wire: 100_000, currency: jpy) == Money(minorUnits: 1000, currency: jpy))
        #expect(try WorldlineAmount.money(wire: 2345, currency: eur) == Money(minorUnits: 2345, currency: eur))
        for code in ["KWD", "BHD", "JOD", "OMR", "TND", "CLF"] {
            let currency = try Currency(code: code)
            let error = #expect(throws: CheckoutError.self) { _ = try WorldlineAmount.wire(Money(minorUnits: 1000, currency: currency), field: "intent.amount") }
            #expect(error?.code == .unsupportedCurrency && error?.field == "intent.amount" && error?.message.contains(code) == true)
            #expect(!WorldlineAmount.currencies.contains(currency))
        }
        let notWhole = #expect(throws: CheckoutError.self) { _ = try WorldlineAmount.money(wire: 2345, currency: jpy, field: "x") }
        #expect(notWhole?.code == .invalidAmount && notWhole?.field == "x")
        let huge = #expect(throws: CheckoutError.self) { _ = try WorldlineAmount.wire(Money(minorUnits: .max / 10, currency: jpy)) }
        #expect(huge?.code == .invalidAmount)
        #expect(WorldlineAmount.currencies.contains(jpy) && WorldlineAmount.currencies.contains(eur))
        #expect(WorldlineGateway.capabilities.currencies == WorldlineAmount.currencies)
    }

    @Test("the vendor's examples (Fixtures/amounts.json, from the API reference and the Python SDK): each converts both ways; what no source settles is refused")
    func vendorExamples() throws {
        let fixture = try #require(try JSONSerialization.jsonObject(with: worldlineFixture("amounts.json")) as? [String: Any])
        for example in try #require(fixture["examples"] as? [[String: Any]]) {
            let currency = try Currency(code: try #require(example["currency"] as? String))
            let money = Money(minorUnits: Int64(try #require(example["iso_minor_units"] as? Int)), currency: currency)
            let wire = Int64(try #require(example["wire"] as? Int))
            #expect(try WorldlineAmount.wire(money) == wire, "\(money)")
            #expect(try WorldlineAmount.money(wire: wire, currency: currency) == money, "\(money)")
        }
        for refused in try #require(fixture["not_settled"] as? [[String: Any]]) {
            let currency = try Currency(code: try #require(refused["currency"] as? String))
            #expect(!WorldlineAmount.supports(currency), "\(currency.code)")
        }
    }

    @Test("a ¥1000 payment is created for 100000 (¥1000.00), and Worldline's answer of 100000 is ¥1000: the attempt's amount")
    func yenPayment() async throws {
        let jpy = try Currency(code: "JPY")
        let transport = RecordingTransport()
        let answer = #"{"creationOutput":{"additionalReference":"a","externalReference":"b"},"payment":{"id":"P-JPY","paymentOutput":{"amountOfMoney":{"amount":100000,"currencyCode":"JPY"},"references":{"merchantReference":"abcdefghijklmnopqrstuvwx"}},"status":"CAPTURED","statusOutput":{"statusCode":800}}}"#
        transport.expect(.post, path: "/v1/1234/payments", respond: TransportResponse(statusCode: 201, headers: ["Content-Type": "application/json"],
                                                                                       body: Data(answer.utf8)))
        let intent = PaymentIntent(merchantReference: "order-jp", amount: Money(minorUnits: 1000, currency: jpy), country: try CountryCode("JP"),
                                   method: .card)
        let context = SubmitContext(intent: intent, attempt: WorldlineServerTests.attempt, returnURL: nil)
        let result = try await WorldlineServerTests.server(transport).submit(WorldlineServerTests.submission(), context: context)
        let body = try #require(try JSONSerialization.jsonObject(with: transport.requests.first?.body ?? Data()) as? [String: Any])
        let money = try #require((body["order"] as? [String: Any])?["amountOfMoney"] as? [String: Any])
        #expect(money["amount"] as? Int == 100_000 && money["currencyCode"] as? String == "JPY")
        #expect(result.report?.status == .paid && result.report?.amount == Money(minorUnits: 1000, currency: jpy))
    }

    @Test("a KWD payment is refused at prepare, naming its currency, before any call to Worldline")
    func kuwaitiDinarRefused() async throws {
        let transport = RecordingTransport()
        let intent = PaymentIntent(merchantReference: "order-kw", amount: Money(minorUnits: 1500, currency: try Currency(code: "KWD")),
                                   country: try CountryCode("KW"), method: .card)
        let error = await #expect(throws: CheckoutError.self) {
            _ = try await WorldlineServerTests.server(transport).prepare(AttemptContext(intent: intent, attempt: WorldlineServerTests.attempt))
        }
        #expect(error?.code == .unsupportedCurrency && error?.field == "intent.amount.currency" && error?.gateway == "worldline")
        #expect(transport.requests.isEmpty)
    }

    @Test("a status with ¥ amounts: amountOfMoney, amountPaid and amountRefunded are read with two decimals; one with cents of a yen is not read")
    func yenStatus() throws {
        let jpy = try Currency(code: "JPY")
        func payment(_ status: String, amount: Int64 = 100_000, paid: Int64? = nil, refunded: Int64? = nil) -> WorldlinePayment {
            WorldlinePayment(id: "P1", paymentOutput: WorldlinePaymentOutput(amountOfMoney: .init(amount: amount, currencyCode: "JPY"),
                                                                             references: nil, amountPaid: paid, amountRefunded: refunded),
                             status: status, statusOutput: nil)
        }
        let attempt = WorldlineServerTests.attempt
        let captured = try WorldlineStatus.report(payment("CAPTURED", paid: 60_000), attempt: attempt, gateway: "worldline", event: "t")
        #expect(captured.amount == Money(minorUnits: 600, currency: jpy))
        let refunded = try WorldlineStatus.report(payment("REFUNDED", refunded: 30_000), attempt: attempt, gateway: "worldline", event: "t")
        #expect(refunded.status == .partiallyRefunded && refunded.refundedTotal == Money(minorUnits: 300, currency: jpy))
        #expect(throws: CheckoutError.self) {
            _ = try WorldlineStatus.report(payment("CAPTURED", amount: 2345), attempt: attempt, gateway: "worldline", event: "t")
        }
    }
}
