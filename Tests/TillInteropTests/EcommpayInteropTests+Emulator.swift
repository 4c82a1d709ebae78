import Foundation
import Testing
import Till
import TillOrchestration
import TillEcommpay
import TillEcommpayServer
import TillGatewayKit
import TillSandbox

extension EcommpayInteropTests {
    // MARK: 3b and 4. The emulator

    @Test("the SDK's Payment Page URLs at the emulator (redirect=True, best_before, unicode): each page opens and completes (paid, declined, 3-D Secure, cascade, cancelled); a URL changed after the SDK signed it is refused; an endpoint built on the SDK verifies every callback the emulator sends and answers OK, refuses tampered and forged ones; Till accepts and refuses the same bytes")
    func sdkAtEmulator() async throws {
        let python = try await PythonEnvironment.ecommpay.value
        let projectId = 31_337, secret = "emulator-project-secret"
        let receiver = try python.start("ecommpay_receiver.py", [secret])
        let receiverURL: URL
        do {
            receiverURL = try #require(URL(string: try await receiver.firstLine()))
        } catch {
            receiver.cancel()
            throw error
        }
        let emulator = EcommpayEmulator(projects: [.init(projectId: projectId, secretKey: secret, callbackURL: receiverURL)],
                                        callbackRetryInterval: .milliseconds(50), callbackMaxAttempts: 2, callbackTimeout: .seconds(5))
        typealias Card = EcommpayEmulator.SDKCard
        let payments: [(id: String, action: EcommpayDevice.PageAction, paid: Bool, status: String)] = [
            ("EP-SDK-1", .pay(Card.test(.success), threeDSecurePasses: true), true, "success"),
            ("EP-SDK-2", .pay(Card.test(.decline), threeDSecurePasses: true), false, "decline"),
            ("EP-SDK-3", .pay(Card.test(.threeDSecurePass), threeDSecurePasses: true), true, "success"),
            ("EP-SDK-4", .pay(Card.test(.threeDSecureFail), threeDSecurePasses: false), false, "decline"),
            ("EP-SDK-5", .pay(Card.test(.cascade), threeDSecurePasses: true), true, "success"),
            ("EP-SDK-6", .cancel, false, ""),
        ]
        var outcomes: [EcommpayDevice.PageOutcome] = []
        var refusedPage: EcommpayDevice.PageOutcome?
        do {
            let sandbox = try await Sandbox.start(emulators: [emulator])
            do {
                let base = sandbox.baseURL(of: emulator)
                let items = payments.enumerated().map { index, payment in
                    EcommpaySDK.URLItem(secret: secret, baseUrl: base.appendingPathComponent("payment").absoluteString,
                                        projectId: String(projectId), paymentId: payment.id, params: [
                                            ["payment_amount", String(1999 + index)], ["payment_currency", "\"EUR\""],
                                            ["customer_id", "\"cust-\(index)\""], ["payment_description", "\"Оплата заказа №\(index) — café & tea\""],
                                            ["merchant_success_url", "\"https://shop.example/ok?order=\(index)\""],
                                            ["merchant_fail_url", "\"https://shop.example/fail?order=\(index)\""],
                                            ["redirect", index % 2 == 0 ? "true" : "false"],
                                            ["best_before", "\"2099-01-01T00:00:00+00:00\""],
                                        ])
                }
                let urls = try await EcommpaySDK.pageURL(items)
                #expect(urls.allSatisfy { $0.url.contains("redirect=True") || $0.url.contains("redirect=False") })
                for (payment, page) in zip(payments, urls) {
                    let url = try #require(URL(string: page.url))
                    outcomes.append(try await EcommpayDevice.playPaymentPage(url, payment.action))
                }
                // Changed after signing: the amount.
                let changed = urls[0].url.replacingOccurrences(of: "payment_amount=1999", with: "payment_amount=1")
                    .replacingOccurrences(of: "payment_id=EP-SDK-1", with: "payment_id=EP-SDK-7")
                refusedPage = try await EcommpayDevice.playPaymentPage(try #require(URL(string: changed)), .cancel)
                await emulator.waitForCallbacks()
                // Emulator-signed callbacks built by hand: another status, then a tampered and a forged one.
                _ = await emulator.sendCrafted(.init(projectId: projectId, paymentId: "EP-SDK-1", paymentStatus: "refunded"))
                _ = await emulator.sendCrafted(.init(projectId: projectId, paymentId: "EP-SDK-1", tamper: ["payment.sum.amount": "1"]))
                _ = await emulator.sendCrafted(.init(projectId: projectId, paymentId: "EP-SDK-1", secretKey: "not-the-project-secret"))
                await emulator.waitForCallbacks()
            } catch {
                await sandbox.stop()
                throw error
            }
            await sandbox.stop()
        } catch {
            receiver.cancel()
            throw error
        }
        let captured = try JSONDecoder().decode(EcommpayReceived.self, from: Data(try await receiver.finish().utf8)).requests
        let sent = await emulator.callbacks

        // The pages.
        for (payment, outcome) in zip(payments, outcomes) {
            let target = outcome.redirect?.absoluteString ?? ""
            if payment.paid {
                #expect(target.hasPrefix("https://shop.example/ok"), "\(payment.id): \(outcome)")
            } else {
                #expect(target.hasPrefix("https://shop.example/fail"), "\(payment.id): \(outcome)")
            }
            let summary = await emulator.payment(projectId: projectId, paymentId: payment.id)
            if !payment.status.isEmpty { #expect(summary?.status == payment.status, "\(payment.id)") }
        }
        let refused = try #require(refusedPage)
        #expect(refused.status == 400 && refused.page?.contains("signature") == true, "\(refused)")
        #expect(await emulator.payment(projectId: projectId, paymentId: "EP-SDK-7") == nil)
        let ledger = await emulator.ledger
        #expect(Set(ledger.map(\.paymentId)) == ["EP-SDK-1", "EP-SDK-3", "EP-SDK-5"])

        // The callbacks: the receiver got the bytes the emulator sent; the SDK verdict and Till's agree.
        let delivered = sent.filter { !$0.dropped }
        try #require(captured.count == delivered.count, "sent \(delivered.count), received \(captured.count)")
        // Callbacks of different payments go out side by side, so compare them as sets of bodies.
        let receivedBodies = captured.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(delivered.map(\.body).sorted() == receivedBodies.sorted(), "the receiver did not get the bytes the emulator sent")
        let server = EcommpayServer(secret: secret, settings: EcommpaySettings(projectId: projectId), transport: NoCallTransport())
        let craftedBodies = delivered.filter(\.crafted).map(\.body)
        try #require(craftedBodies.count == 3)
        let crafted = try craftedBodies.map { body in try #require(captured.first { String(decoding: $0.body, as: UTF8.self) == body }) }
        let genuine = captured.filter { !craftedBodies.contains(String(decoding: $0.body, as: UTF8.self)) }
        #expect(genuine.count == 6, "one callback per finished payment, two for the cascade")
        for request in genuine {
            let text = String(decoding: request.body, as: UTF8.self)
            #expect(request.accepted && request.status == 200, "the SDK refused the emulator's callback \(text): \(request.error ?? "")")
            #expect(request.contentType?.hasPrefix("application/json") == true)
            let verified = try server.verifyNotification(IncomingNotification(headers: ["content-type": request.contentType ?? ""], body: request.body))
            #expect(verified.report.attempt.rawValue == request.paymentId)
            #expect(verified.report.amount.map { String($0.minorUnits) } == request.amount)
            #expect(verified.report.status == EcommpayServer.paymentStatus(request.paymentStatus ?? "",
                                                                           cascading: (try? EcommpayCallback(request.body, secret: secret))?.cascadingWithRedirect ?? false))
        }
        #expect(Set(genuine.compactMap(\.paymentId)).isSuperset(of: ["EP-SDK-1", "EP-SDK-2", "EP-SDK-3", "EP-SDK-4", "EP-SDK-5"]))
        #expect(crafted[0].accepted && crafted[0].paymentStatus == "refunded")
        #expect(try server.verifyNotification(IncomingNotification(body: crafted[0].body)).report.status == .refunded)
        for (request, name) in [(crafted[1], "tampered"), (crafted[2], "forged")] {
            #expect(!request.accepted && request.status == 400, "the SDK accepted the \(name) callback")
            #expect(EcommpayInterop.refusal(String(decoding: request.body, as: UTF8.self), secret: secret)?.code == .signatureMismatch, "\(name)")
        }
    }

    @Test("Till's own Payment Page URL (EcommpayServer.prepare, Alipay) at the emulator: the page opens and completes; the SDK's endpoint verifies the callback and Till reads it as paid")
    func tillURLAtEmulator() async throws {
        let python = try await PythonEnvironment.ecommpay.value
        let projectId = 4711, secret = "till-page-emulator-secret"
        let receiver = try python.start("ecommpay_receiver.py", [secret])
        let receiverURL: URL
        do {
            receiverURL = try #require(URL(string: try await receiver.firstLine()))
        } catch {
            receiver.cancel()
            throw error
        }
        let emulator = EcommpayEmulator(projects: [.init(projectId: projectId, secretKey: secret, callbackURL: receiverURL)],
                                        callbackRetryInterval: .milliseconds(50), callbackMaxAttempts: 2, callbackTimeout: .seconds(5))
        var server: EcommpayServer?
        var outcome: EcommpayDevice.PageOutcome?
        do {
            let sandbox = try await Sandbox.start(emulators: [emulator])
            do {
                let base = sandbox.baseURL(of: emulator)
                let till = EcommpayServer(environment: EcommpayEnvironment(paymentPage: base, gate: base), secret: secret,
                                          settings: EcommpaySettings(projectId: projectId), transport: NoCallTransport())
                server = till
                let intent = PaymentIntent(merchantReference: "order-page", amount: Money(minorUnits: 4250, currency: try #require(Currency.lookup("EUR"))),
                                           method: .alipay, customer: Customer(reference: "cust-page", email: "buyer@shop.example"),
                                           description: "Оплата заказа — café & tea; 2=two")
                let context = AttemptContext(intent: intent, attempt: AttemptReference(rawValue: "attempt-page-1"),
                                             returnURL: URL(string: "https://shop.example/return?x=1"))
                let url = try #require(try await till.prepare(context).parameters[EcommpayGateway.Parameter.pageURL].flatMap(URL.init(string:)))
                outcome = try await EcommpayDevice.playPaymentPage(url, .pay(.test(.success), threeDSecurePasses: true))
                await emulator.waitForCallbacks()
            } catch {
                await sandbox.stop()
                throw error
            }
            await sandbox.stop()
        } catch {
            receiver.cancel()
            throw error
        }
        let captured = try JSONDecoder().decode(EcommpayReceived.self, from: Data(try await receiver.finish().utf8)).requests
        #expect(outcome?.redirect?.absoluteString.hasPrefix("https://shop.example/return") == true, "\(String(describing: outcome))")
        let request = try #require(captured.last)
        #expect(request.accepted && request.paymentId == "attempt-page-1" && request.paymentStatus == "success", "\(request.error ?? "")")
        let report = try #require(server).verifyNotification(IncomingNotification(body: request.body)).report
        #expect(report.status == .paid && report.amount?.minorUnits == 4250)
    }
}

/// What `Python/ecommpay_receiver.py` received.
struct EcommpayReceived: Decodable {
    struct Request: Decodable {
        var method: String
        var path: String
        var contentType: String?
        var bodyBase64: String
        var accepted: Bool
        var error: String?
        var paymentId: String?
        var paymentStatus: String?
        var amount: String?
        var status: Int

        var body: Data { Data(base64Encoded: bodyBase64) ?? Data() }
    }
    var requests: [Request]
}
