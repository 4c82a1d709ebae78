import Foundation
import Testing
import Till
import TillTesting
@testable import TillCitconServer

@Suite("Citcon: what it needs of a payment, checked before anything is stored or sent")
struct CitconRequirementTests {
    func intent(_ method: PaymentMethod = .wechatPay, country: String? = "US", note: String? = nil, reference: String? = nil) throws -> PaymentIntent {
        PaymentIntent(merchantReference: "o-1", amount: Money(minorUnits: 1500, currency: try Currency(code: "USD")),
                      country: try country.map { try CountryCode($0) }, method: method, customer: Customer(reference: reference), description: note)
    }

    @Test("the country, a note of at most 128 characters, the consumer reference where the method needs it; each by its field, no call")
    func requirements() throws {
        let transport = RecordingTransport()
        let citcon = Fixtures.server(transport)
        #expect(citcon.requirementIssues(for: try intent()).isEmpty)
        #expect(citcon.requirementIssues(for: try intent(country: nil)).map(\.field) == ["intent.country"])
        #expect(citcon.requirementIssues(for: try intent(note: String(repeating: "n", count: 129))).map(\.field) == ["intent.description"])
        if let needsReference = CitconServer.consumerReferenceMethods.first {
            #expect(citcon.requirementIssues(for: try intent(needsReference)).map(\.field) == ["intent.customer.reference"])
            #expect(citcon.requirementIssues(for: try intent(needsReference, reference: "c-1")).isEmpty)
        }
        #expect(transport.requests.isEmpty)
    }
}
