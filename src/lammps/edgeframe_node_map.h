/* -*- c++ -*- ----------------------------------------------------------
   Which LAMMPS atoms become engine nodes, and the directed pairs between them.

   - Atoms whose type is mapped to NULL (pair_style hybrid) are left out.
   - Receptive-field pruning: with T message-passing layers, the energy of an
     owned atom depends on atoms at most T hops away, and an atom k hops away
     needs correct features only up to layer T-k. So a pair (i <- j) is kept
     only when i is at most T-1 hops from an owned atom, and a node only when it
     is at most T hops away. Hops are counted on the neighbour list itself
     (cutoff r_cut + skin), a superset of the true edges, so the pruning is
     exact for every step until the next rebuild.
   - Per-layer exchange (build_exchange): ghost features are received from
     their owners before every layer, so only owned atoms receive edges, and
     only ghosts that send to an owned atom become nodes.
   - Owned atoms come first (engine nodes 0..n_local-1 are the ones whose
     energies count), then ghosts, each in LAMMPS order.
------------------------------------------------------------------------- */

#ifndef LMP_EDGEFRAME_NODE_MAP_H
#define LMP_EDGEFRAME_NODE_MAP_H

#include <vector>

#include "neigh_list.h"
#include "neighbor.h"

namespace LAMMPS_NS {
class NeighList;

namespace edgeframe_glue {

  struct NodeMap {
    std::vector<int> node_of_atom;    // [nall] engine node or -1 (NULL type or pruned)
    std::vector<int> atom_of_node;    // [n_nodes] LAMMPS local index (owned or ghost)
    std::vector<int> species;    // [n_nodes] potential species index
    std::vector<int> pair_i, pair_j;    // directed pairs (receiver i <- sender j), node indices
    std::vector<int> pair_image;    // folded mode: [pairs] LAMMPS index of the sender's image
    int n_local = 0;    // owned atoms among the nodes
    int n_candidates = 0;    // mapped atoms before pruning (for the log)

    int n_nodes() const { return (int) atom_of_node.size(); }

    // type: LAMMPS atom types [nall]; type_species[t]: species of type t or -1.
    // list: a full neighbour list that includes ghosts' neighbours (REQ_FULL | REQ_GHOST).
    // layers: T, the number of message-passing layers of the model.
    void build(const int *type, int nlocal, int nall, const std::vector<int> &type_species, const NeighList *list,
               int layers);

    // Per-layer exchange mode (ghost cutoff r_cut + skin, a plain full list): nodes are the
    // mapped owned atoms and the mapped ghosts that are neighbours of one of them; pairs are
    // (owned i <- j) only. Ghost features come from their owners through the exchange.
    void build_exchange(const int *type, int nlocal, int nall, const std::vector<int> &type_species,
                        const NeighList *list);

    // Single-rank periodic runs: every ghost is a periodic image of an owned atom, whose
    // features are the owner's at every layer. Nodes are the owned atoms only; a neighbour j
    // that is a ghost becomes an edge to its owner with a shift x_image - x_owner (recomputed
    // every step by the caller, so box changes under NPT are followed). Exact, and no ghost
    // shell: T times fewer layers of atoms to evaluate. owner_of: LAMMPS index of the owned
    // copy of atom a (atom->map(tag[a])).
    template <class OwnerOf>
    void build_folded(const int *type, int nlocal, const std::vector<int> &type_species, const NeighList *list,
                      OwnerOf &&owner_of);

   private:
    void number_marked_atoms(const int *type, int nlocal, int nall, const std::vector<int> &type_species);
    void collect_pairs(const NeighList *list, int n_receivers, int max_hop);
    std::vector<int> m_hop;    // [nall] hops from the nearest owned atom, or -1
    std::vector<int> m_frontier, m_next;
  };

  template <class OwnerOf>
  void NodeMap::build_folded(const int *type, int nlocal, const std::vector<int> &type_species, const NeighList *list,
                             OwnerOf &&owner_of)
  {
    node_of_atom.assign(nlocal, -1);
    atom_of_node.clear();
    species.clear();
    for (int i = 0; i < nlocal; i++) {
      const int s = type_species[type[i]];
      if (s < 0) continue;
      node_of_atom[i] = (int) atom_of_node.size();
      atom_of_node.push_back(i);
      species.push_back(s);
    }
    n_local = n_candidates = (int) atom_of_node.size();
    pair_i.clear();
    pair_j.clear();
    pair_image.clear();
    for (int ii = 0; ii < list->inum; ii++) {
      const int i = list->ilist[ii];
      const int ni = i < nlocal ? node_of_atom[i] : -1;
      if (ni < 0) continue;
      const int *jlist = list->firstneigh[i];
      for (int jj = 0; jj < list->numneigh[i]; jj++) {
        const int j = jlist[jj] & NEIGHMASK;
        const int owner = j < nlocal ? j : owner_of(j);
        const int nj = owner >= 0 && owner < nlocal ? node_of_atom[owner] : -1;
        if (nj < 0) continue;
        pair_i.push_back(ni);
        pair_j.push_back(nj);
        pair_image.push_back(j);
      }
    }
  }

}    // namespace edgeframe_glue
}    // namespace LAMMPS_NS

#endif
