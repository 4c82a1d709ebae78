import Foundation
import TillGatewayKit

/// What the customer chooses from: payment products and, when grouping, product groups (a grouped
/// product is shown only through its group), with their stored accounts, in display order.
///
/// The Swift client SDK's `PaymentItems` (`Models/PaymentItem/PaymentItems.swift`) builds the list
/// the same way. Two differences, on purpose: a product is hidden only behind a group that is in the
/// group list (the SDK compares the product's group with the first group only and hides the product
/// whatever that comparison says), and sorting keeps items without a display order last, ties in the
/// gateway's order (the SDK's comparator is not a strict order when one is missing).
public struct WorldlinePaymentItems: Sendable, Hashable {
    /// One entry of the list.
    public enum Item: Sendable, Hashable, Identifiable {
        case product(WorldlineBasicPaymentProduct)
        case group(WorldlineBasicPaymentProductGroup)

        /// The product id as text (`"1"`), or the group id (`"cards"`).
        public var id: String {
            switch self {
            case .product(let product): String(product.id)
            case .group(let group): group.id
            }
        }

        /// The item's display hints.
        public var displayHints: WorldlineDisplayHints {
            switch self {
            case .product(let product): product.displayHints
            case .group(let group): group.displayHints
            }
        }

        /// The item's stored accounts.
        public var accountsOnFile: [WorldlineAccountOnFile] {
            switch self {
            case .product(let product): product.accountsOnFile
            case .group(let group): group.accountsOnFile
            }
        }

        /// The label, in the locale the API was called with.
        public var label: String? { displayHints.label }
    }

    /// The items to show, in display order.
    public var items: [Item]
    /// Every product the gateway listed, grouped or not.
    public var products: [WorldlineBasicPaymentProduct]
    /// Every group the gateway listed (empty when not grouping).
    public var groups: [WorldlineBasicPaymentProductGroup]
    /// The base of the logo paths.
    public var assetURL: URL

    /// Builds the list from `products` and `groups` (pass no groups to list products only).
    public init(products: [WorldlineBasicPaymentProduct], groups: [WorldlineBasicPaymentProductGroup] = [], assetURL: URL) {
        self.products = products
        self.groups = groups
        self.assetURL = assetURL
        var items: [Item] = []
        var shownGroups: Set<String> = []
        let groupsById = Dictionary(groups.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        for product in products {
            if let groupId = product.paymentProductGroup, let group = groupsById[groupId] {
                if shownGroups.insert(groupId).inserted { items.append(.group(group)) }
            } else {
                items.append(.product(product))
            }
        }
        self.items = items.enumerated()
            .sorted { ($0.element.displayHints.displayOrder ?? Int.max, $0.offset) < ($1.element.displayHints.displayOrder ?? Int.max, $1.offset) }
            .map(\.element)
    }

    /// Fetches the products for `context` and, when `grouped`, the groups (which needs the context's
    /// locale), and builds the list.
    public static func load(_ api: WorldlineClientAPI, for context: WorldlinePaymentContext,
                            grouped: Bool = true) async throws(CheckoutError) -> WorldlinePaymentItems {
        let products = try await api.paymentProducts(for: context).paymentProducts
        let groups = grouped ? try await api.paymentProductGroups(for: context).paymentProductGroups : []
        return WorldlinePaymentItems(products: products, groups: groups, assetURL: api.session.assetURL)
    }

    /// Every stored account of the listed items, in item order.
    public var accountsOnFile: [WorldlineAccountOnFile] { items.flatMap(\.accountsOnFile) }

    /// Whether the customer has any stored account.
    public var hasAccountsOnFile: Bool { items.contains { !$0.accountsOnFile.isEmpty } }

    /// The item with `id` (a product id as text, or a group id), shown or hidden behind its group.
    public func item(id: String) -> Item? {
        if let product = products.first(where: { String($0.id) == id }) { return .product(product) }
        return groups.first { $0.id == id }.map(Item.group)
    }

    /// The product with `id`.
    public func product(id: Int) -> WorldlineBasicPaymentProduct? { products.first { $0.id == id } }

    /// The logo of `item`, resolved against the session's asset URL.
    public func logo(of item: Item) -> URL? {
        item.displayHints.logo.flatMap { WorldlineAssets.url(forPath: $0, assetURL: assetURL) }
    }

    /// The logo of the product an account on file belongs to (or the account's own logo).
    public func logo(of account: WorldlineAccountOnFile) -> URL? {
        let path = account.displayHints.logo ?? product(id: account.paymentProductId)?.displayHints.logo
        return path.flatMap { WorldlineAssets.url(forPath: $0, assetURL: assetURL) }
    }
}
