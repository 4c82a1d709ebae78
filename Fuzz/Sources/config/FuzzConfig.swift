import Foundation
import FuzzSupport
import Till
import TillCitconServer
import TillEcommpayServer
import TillIPayNowServer
import TillOrchestration
import TillPayFortServer
import TillService
import TillWorldlineServer

// The configuration loader: TillService's ConfigurationLoader.load(_:modules:) (the strict reader, then
// TillConfiguration decoded with every issue collected, then validated against the five gateway modules' declared
// capabilities), and TillOrchestration's ConfigurationLoader.decode of one MerchantConfiguration. What loads is
// then compiled into a GatewayRouter (as `till server` does for each merchant) and asked to route a few payments,
// so the routing rules read from the file are exercised too.

private let modules: [String: GatewayCapabilities] = [
    PayFortPlugin.plugin.module: PayFortPlugin.plugin.capabilities,
    CitconPlugin.plugin.module: CitconPlugin.plugin.capabilities,
    WorldlinePlugin.plugin.module: WorldlinePlugin.plugin.capabilities,
    IPayNowPlugin.plugin.module: IPayNowPlugin.plugin.capabilities,
    EcommpayPlugin.plugin.module: EcommpayPlugin.plugin.capabilities,
]

private let intents: [PaymentIntent] = {
    func money(_ minor: Int64, _ code: String) -> Money { Money(minorUnits: minor, currency: Currency.lookup(code)!) }
    return [
        PaymentIntent(merchantReference: "o1", amount: money(1050, "USD"), country: try? CountryCode("US"), method: .card,
                      cardIIN: "411111", metadata: ["channel": "app", "tier": "gold"]),
        PaymentIntent(merchantReference: "o2", amount: money(100_000, "SAR"), country: try? CountryCode("SA"), method: .mada),
        PaymentIntent(merchantReference: "o3", amount: money(1, "CNY"), country: try? CountryCode("CN"), method: .wechatPay,
                      action: .authorize),
        PaymentIntent(merchantReference: "o4", amount: money(0, "EUR"), method: .card, action: .verify),
    ]
}()

private func exercise(_ merchant: MerchantConfiguration) {
    guard let router = try? GatewayRouter(merchant: merchant, modules: modules) else { return }
    var generator = SeededGenerator(seed: 1)
    for intent in intents {
        _ = router.eligibilityIssue(for: intent, path: "body")
        let decision = router.route(intent, using: &generator, explain: true)
        for gateway in decision.candidates { _ = decision.notes(about: gateway) }
    }
    for intent in intents { _ = merchant.maxAmount(for: intent.amount.currency) }
    _ = merchant.enabledGateways
    _ = merchant.keys
    _ = merchant.returnURLRule
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = FuzzInput(data, size)
    switch ConfigurationLoader.load(input.data, modules: modules) {
    case .success(let configuration):
        for merchant in configuration.merchants { exercise(merchant) }
    case .failure(let error):
        _ = error.description
    }
    // One merchant on its own (a merchant object, as `till route` and the tests read one).
    if case .success(let merchant) = ConfigurationLoader.decode(MerchantConfiguration.self, from: input.data) {
        exercise(merchant)
    }
    return 0
}

@main
enum FuzzMain {
    static func main() { runLibFuzzer { data, size in fuzz(data ?? emptyInput, size) } }
}
